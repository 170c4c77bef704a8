package main

// rig proxy: a TLS-terminating reverse proxy in front of the API server for
// one client, that can hold the requests and the streamed answers whose URL
// matches a pattern. Holding the Secrets watch of a manager is an informer
// that falls behind the others while the API server itself is current
// (test/rig/README.md).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// hold blocks whatever matches its pattern until released.
type hold struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pattern *regexp.Regexp
}

func newHold() *hold {
	h := &hold{}
	h.cond = sync.NewCond(&h.mu)
	return h
}

func (h *hold) set(pattern *regexp.Regexp) {
	h.mu.Lock()
	h.pattern = pattern
	h.mu.Unlock()
	h.cond.Broadcast()
}

// wait returns once `uri` is not held.
func (h *hold) wait(uri string) {
	h.mu.Lock()
	for h.pattern != nil && h.pattern.MatchString(uri) {
		h.cond.Wait()
	}
	h.mu.Unlock()
}

// heldBody passes a streamed answer on only while its request is not held:
// what it read during a hold is kept until the release.
type heldBody struct {
	io.ReadCloser
	uri  string
	hold *hold
}

func (b *heldBody) Read(p []byte) (int, error) {
	b.hold.wait(b.uri)
	n, err := b.ReadCloser.Read(p)
	b.hold.wait(b.uri)
	return n, err
}

func cmdProxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	dir := fs.String("dir", "", "the rig's directory")
	kubeconfig := fs.String("kubeconfig", "", "the client's kubeconfig: its user is the proxy's identity upstream")
	out := fs.String("out", "", "the kubeconfig to write that goes through the proxy; OUT.control gets the control URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *kubeconfig == "" || *out == "" {
		return errors.New("proxy: --dir, --kubeconfig and --out are required")
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("proxy: %v", err)
	}
	upstreamTLS, err := rest.TLSConfigFor(config)
	if err != nil {
		return fmt.Errorf("proxy: %v", err)
	}
	upstream, err := url.Parse(config.Host)
	if err != nil {
		return fmt.Errorf("proxy: %v", err)
	}
	h := newHold()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:     &http.Transport{TLSClientConfig: upstreamTLS, ForceAttemptHTTP2: false},
		FlushInterval: -1, // watches: every event at once
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &heldBody{ReadCloser: resp.Body, uri: resp.Request.URL.RequestURI(), hold: h}
			return nil
		},
	}
	l := layout{*dir}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.wait(r.URL.RequestURI())
		proxy.ServeHTTP(w, r)
	})}
	go func() {
		_ = server.ServeTLS(listener, l.p("pki", "apiserver.crt"), l.p("pki", "apiserver.key"))
	}()

	// The control: POST /hold?match=REGEXP (RE2, against the request URI),
	// POST /release.
	control, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hold", func(w http.ResponseWriter, r *http.Request) {
		pattern, err := regexp.Compile(r.URL.Query().Get("match"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.set(pattern)
		fmt.Fprintln(w, "held")
	})
	mux.HandleFunc("POST /release", func(w http.ResponseWriter, _ *http.Request) {
		h.set(nil)
		fmt.Fprintln(w, "released")
	})
	go func() { _ = http.Serve(control, mux) }()

	through, err := clientcmd.LoadFromFile(*kubeconfig)
	if err != nil {
		return fmt.Errorf("proxy: %v", err)
	}
	for _, cluster := range through.Clusters {
		cluster.Server = "https://" + listener.Addr().String()
	}
	if err := clientcmd.WriteToFile(*through, *out); err != nil {
		return fmt.Errorf("proxy: %v", err)
	}
	// Written last, by rename: its presence says the proxy serves.
	if err := os.WriteFile(*out+".control.tmp", []byte("http://"+control.Addr().String()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(*out+".control.tmp", *out+".control"); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
	h.set(nil)
	return server.Close()
}
