package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// layout names the files of a rig directory.
type layout struct{ dir string }

func (l layout) p(parts ...string) string { return filepath.Join(append([]string{l.dir}, parts...)...) }
func (l layout) pidFile() string          { return l.p("rig.pid") }
func (l layout) readyFile() string        { return l.p("ready") }
func (l layout) failedFile() string       { return l.p("failed") }
func (l layout) logs() string             { return l.p("logs") }
func (l layout) pki() string              { return l.p("pki") }

type binaries struct{ etcd, apiserver, kcm, kubectl, tofu, registry, bwrap string }

// binariesFromEnv reads the paths that test/rig/rig exports after building.
func binariesFromEnv() binaries {
	kube := os.Getenv("RIG_KUBE_BIN")
	reg := os.Getenv("RIG_REGISTRY")
	if reg == "" {
		reg = "/usr/bin/docker-registry"
	}
	return binaries{
		etcd:      os.Getenv("RIG_ETCD"),
		apiserver: filepath.Join(kube, "kube-apiserver"),
		kcm:       filepath.Join(kube, "kube-controller-manager"),
		kubectl:   filepath.Join(kube, "kubectl"),
		tofu:      os.Getenv("RIG_TOFU"),
		registry:  reg,
		bwrap:     "/usr/bin/bwrap",
	}
}

// cmdUp starts the supervisor in the background and returns once the rig is
// ready (or has failed, with its one-line cause).
func cmdUp(args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := fs.String("dir", "", "the rig's private directory")
	tier := fs.String("tier", "e2e", "integration (etcd + apiserver), e2e (+ controller manager, kubelet, registry), "+
		"capi (+ Cluster API) or install (e2e + cert-manager; Cluster API built, for clusterctl to install)")
	owner := fs.Int("owner-pid", 0, "tear down when this process exits")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for readiness")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("up: --dir is required")
	}
	if *tier != "integration" && *tier != "e2e" && *tier != "capi" && *tier != "install" {
		return fmt.Errorf("up: --tier must be integration, e2e, capi or install, not %q", *tier)
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	l := layout{abs}
	if pid := readPid(l); pidAlive(pid) {
		return fmt.Errorf("up: a rig is already running in %s (pid %d); run rig down --dir %s", abs, pid, abs)
	}
	if err := os.MkdirAll(l.logs(), 0o755); err != nil {
		return err
	}
	os.Remove(l.readyFile())
	os.Remove(l.failedFile())
	log, err := os.OpenFile(filepath.Join(l.logs(), "rig.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "serve", "--dir", abs, "--tier", *tier, "--owner-pid", strconv.Itoa(*owner))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("up: cannot start the supervisor: %v", err)
	}
	log.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(*timeout)
	for {
		if _, err := os.Stat(l.readyFile()); err == nil {
			fmt.Printf("rig: up in %s\n  source %s\n  kubectl get nodes\n", abs, l.p("env"))
			return nil
		}
		if b, err := os.ReadFile(l.failedFile()); err == nil {
			return fmt.Errorf("up: %s", strings.TrimSpace(string(b)))
		}
		select {
		case err := <-exited:
			if b, e := os.ReadFile(l.failedFile()); e == nil {
				return fmt.Errorf("up: %s", strings.TrimSpace(string(b)))
			}
			return fmt.Errorf("up: the supervisor exited (%v); see %s", err, filepath.Join(l.logs(), "rig.log"))
		case <-deadline:
			_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
			return fmt.Errorf("up: not ready within %s; see %s", *timeout, l.logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readPid(l layout) int {
	b, err := os.ReadFile(l.pidFile())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// cmdDown stops the supervisor, which stops every component and pod.
func cmdDown(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := fs.String("dir", "", "the rig's private directory")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("down: --dir is required")
	}
	l := layout{*dir}
	pid := readPid(l)
	if !pidAlive(pid) {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 600 && pidAlive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if pidAlive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("down: the supervisor (pid %d) did not stop in 30s and was killed; see %s", pid, l.logs())
	}
	return nil
}

// cmdRestart restarts the API server or etcd on the same port and data, for
// tests of watches, clients and the manager across a restart. Returns when
// the component is ready again.
func cmdRestart(args []string) error {
	if len(args) < 1 || (args[0] != "apiserver" && args[0] != "etcd") {
		return errors.New("restart: only 'apiserver' or 'etcd' can be restarted")
	}
	what := args[0]
	fs := flag.NewFlagSet("restart", flag.ExitOnError)
	dir := fs.String("dir", "", "the rig's private directory")
	_ = fs.Parse(args[1:])
	l := layout{*dir}
	pid := readPid(l)
	if !pidAlive(pid) {
		return fmt.Errorf("restart: no rig is running in %s", *dir)
	}
	gen := l.p(what + ".generation")
	before, _ := os.ReadFile(gen)
	if err := os.WriteFile(l.p("restart.request"), []byte(what), 0o644); err != nil {
		return err
	}
	_ = syscall.Kill(pid, syscall.SIGUSR1)
	for i := 0; i < 1200; i++ {
		now, _ := os.ReadFile(gen)
		if string(now) != string(before) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("restart: %s did not come back in 60s; see %s", what, l.logs())
}

// cmdPause stops etcd (SIGSTOP) and returns once it is stopped; the
// supervisor resumes it (SIGCONT) SECONDS later, even if the caller is gone:
// an etcd that stalls without dying, as a slow disk makes it.
func cmdPause(args []string) error {
	return outageRequest("pause", "etcd", args, "pause.request", "etcd.paused", 10*time.Second)
}

// outageRequest asks the supervisor (a request file, then SIGUSR2) to take
// `component` down for SECONDS (args: COMPONENT SECONDS --dir DIR) and
// returns once it says so (its `generation` file changed), within `wait`.
func outageRequest(cmd, component string, args []string, request, generation string, wait time.Duration) error {
	usage := fmt.Sprintf("%s: usage: %s %s SECONDS --dir DIR", cmd, cmd, component)
	if len(args) < 2 || args[0] != component {
		return errors.New(usage)
	}
	seconds, err := strconv.Atoi(args[1])
	if err != nil || seconds < 1 || seconds > 600 {
		return fmt.Errorf("%s: SECONDS must be a whole number from 1 to 600, not %q", cmd, args[1])
	}
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	dir := fs.String("dir", "", "the rig's private directory")
	_ = fs.Parse(args[2:])
	l := layout{*dir}
	pid := readPid(l)
	if !pidAlive(pid) {
		return fmt.Errorf("%s: no rig is running in %s", cmd, *dir)
	}
	gen := l.p(generation)
	before, _ := os.ReadFile(gen)
	if err := os.WriteFile(l.p(request), []byte(strconv.Itoa(seconds)), 0o644); err != nil {
		return err
	}
	_ = syscall.Kill(pid, syscall.SIGUSR2)
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		now, _ := os.ReadFile(gen)
		if string(now) != string(before) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: %s was not down within %s; see %s", cmd, component, wait,
		filepath.Join(l.logs(), "rig.log"))
}

// cmdCompact compacts etcd at its current revision (physically: the old
// revisions are gone when it returns), so a watch that resumes from an
// older resourceVersion is answered 410 Gone, as after an outage longer than
// the API server's compaction interval. etcd's JSON gateway on its client
// URL (plain HTTP on loopback, as the API server reaches it) serves both
// calls.
func cmdCompact(args []string) error {
	if len(args) < 1 || args[0] != "etcd" {
		return errors.New("compact: usage: compact etcd --dir DIR")
	}
	fs := flag.NewFlagSet("compact", flag.ExitOnError)
	dir := fs.String("dir", "", "the rig's private directory")
	_ = fs.Parse(args[1:])
	l := layout{*dir}
	if !pidAlive(readPid(l)) {
		return fmt.Errorf("compact: no rig is running in %s", *dir)
	}
	b, err := os.ReadFile(l.p("etcd.url"))
	if err != nil {
		return fmt.Errorf("compact: the rig in %s does not name its etcd: %v", *dir, err)
	}
	rev, err := compactEtcd(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("compact: %v", err)
	}
	fmt.Println(rev)
	return nil
}

// compactEtcd reads etcd's current revision (a count-only range over every
// key) and compacts at it; returns the revision.
func compactEtcd(url string) (int64, error) {
	post := func(path string, body map[string]any, out any) error {
		text, err := json.Marshal(body)
		if err != nil {
			return err
		}
		resp, err := httpPlain.Post(url+path, "application/json", bytes.NewReader(text))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		reply, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(string(reply)))
		}
		if out == nil {
			return nil
		}
		return json.Unmarshal(reply, out)
	}
	// The range from "\x00" to "\x00" is every key; the gateway encodes
	// bytes in base64 and 64-bit integers as strings.
	var rangeReply struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := post("/v3/kv/range", map[string]any{"key": "AA==", "range_end": "AA==", "count_only": true},
		&rangeReply); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(rangeReply.Header.Revision, 10, 64)
	if err != nil || rev < 1 {
		return 0, fmt.Errorf("/v3/kv/range: no revision in the reply (%q)", rangeReply.Header.Revision)
	}
	if err := post("/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true},
		nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// cmdStop stops the registry (SIGTERM: its port refuses connections) and
// returns once it has exited; the supervisor starts it again SECONDS later
// on the same port and storage, even if the caller is gone: a registry
// that is down for a while.
func cmdStop(args []string) error {
	return outageRequest("stop", "registry", args, "stop.request", "registry.stopped", 15*time.Second)
}

// rig is the supervisor's state.
type rig struct {
	l    layout
	bins binaries
	pki  *pki
	etcd *component
	api  *component
	kcm  *component
	reg  *component
	capi *component
	// certManager runs in the install tier (certmanager.go).
	certManager *component
	// git serves Git repositories over HTTPS and SSH (git.go), e2e and up.
	git     *gitServer
	apiPort int
	apiArgs []string
	// etcdArgs start etcd again on the same ports and data (restart etcd).
	etcdArgs []string
	// etcdPaused is true between a pause's SIGSTOP and its SIGCONT.
	etcdPaused bool
	// regConfig starts the registry again on the same port and storage
	// (stop registry); regStopped is true until it has.
	regConfig  string
	regStopped bool
	cancel     context.CancelFunc
	kubelet    *kubelet
}

func cmdServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "")
	tier := fs.String("tier", "e2e", "")
	owner := fs.Int("owner-pid", 0, "")
	_ = fs.Parse(args)
	r := &rig{l: layout{*dir}, bins: binariesFromEnv()}
	if err := os.WriteFile(r.l.pidFile(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2)
	err := r.start(*tier)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rig: %v\n", err)
		_ = os.WriteFile(r.l.failedFile(), []byte(err.Error()+"\n"), 0o644)
		r.stop()
		return err
	}
	_ = os.WriteFile(r.l.readyFile(), nil, 0o644)
	fmt.Println("rig: ready")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	resume := make(<-chan time.Time)
	back := make(<-chan time.Time) // the registry's restart after a stop
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGUSR1 {
				what, _ := os.ReadFile(r.l.p("restart.request"))
				restart := r.restartAPIServer
				if strings.TrimSpace(string(what)) == "etcd" {
					restart = r.restartEtcd
				}
				if err := restart(); err != nil {
					fmt.Fprintf(os.Stderr, "rig: %v\n", err)
				}
				continue
			}
			if s == syscall.SIGUSR2 {
				// A pause of etcd or a stop of the registry: each request
				// is read once.
				if seconds := takeRequest(r.l.p("stop.request")); seconds > 0 && r.stopRegistry() {
					back = time.After(time.Duration(seconds) * time.Second)
				}
				seconds := takeRequest(r.l.p("pause.request"))
				if seconds > 0 && !r.etcdPaused && !r.etcd.exited() {
					fmt.Printf("rig: pausing etcd for %ds\n", seconds)
					_ = syscall.Kill(-r.etcd.cmd.Process.Pid, syscall.SIGSTOP)
					r.etcdPaused = true
					resume = time.After(time.Duration(seconds) * time.Second)
					bumpGeneration(r.l.p("etcd.paused"))
				}
				continue
			}
			fmt.Printf("rig: %v, stopping\n", s)
			r.stop()
			return nil
		case <-resume:
			r.resumeEtcd()
		case <-back:
			if err := r.restartRegistry(); err != nil {
				fmt.Fprintf(os.Stderr, "rig: %v\n", err)
			}
		case <-tick.C:
			if *owner > 0 && !pidAlive(*owner) {
				fmt.Printf("rig: owner %d has exited, stopping\n", *owner)
				r.stop()
				return nil
			}
		}
	}
}

// start brings the components up in dependency order.
func (r *rig) start(tier string) error {
	var err error
	if r.pki, err = newPKI(r.l.pki()); err != nil {
		return fmt.Errorf("cannot create the PKI in %s: %v", r.l.pki(), err)
	}
	if err := r.startEtcd(); err != nil {
		return err
	}
	if err := r.startAPIServer(); err != nil {
		return err
	}
	if err := r.writeKubeconfigs(); err != nil {
		return err
	}
	env := map[string]string{
		"KUBECONFIG":        r.l.p("kubeconfig"),
		"CAPTF_RIG_DIR":     r.l.dir,
		"CAPTF_RIG_SERVER":  fmt.Sprintf("https://127.0.0.1:%d", r.apiPort),
		"CAPTF_RIG_CA":      r.pki.path("ca.crt"),
		"CAPTF_RIG_KUBECTL": r.bins.kubectl,
		"CAPTF_RIG_TIER":    "integration",
	}
	// Built by test/rig/build/prometheus.sh for every tier (test/rig/rig).
	if bin := os.Getenv("RIG_PROMETHEUS_BIN"); bin != "" {
		env["CAPTF_RIG_PROMTOOL"] = filepath.Join(bin, "promtool")
		env["CAPTF_RIG_PROMETHEUS"] = filepath.Join(bin, "prometheus")
	}
	if names := os.Getenv("RIG_PROMQL_NAMES"); names != "" {
		env["CAPTF_RIG_PROMQL_NAMES"] = names
	}
	if tier != "integration" {
		if err := r.startKCM(); err != nil {
			return err
		}
		regAddr, err := r.startRegistry()
		if err != nil {
			return err
		}
		if err := r.startGit(); err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		_, regPort, _ := net.SplitHostPort(regAddr)
		rp, _ := strconv.Atoi(regPort)
		r.kubelet, err = startKubelet(ctx, r.l, r.pki, r.apiPort, r.bins.bwrap,
			[]int{r.apiPort, rp, r.git.httpsPort, r.git.sshPort})
		if err != nil {
			return fmt.Errorf("the process kubelet did not start: %v; see %s", err, filepath.Join(r.l.logs(), "rig.log"))
		}
		env["CAPTF_RIG_REGISTRY"] = regAddr
		env["CAPTF_RIG_TOFU"] = r.bins.tofu
		for k, v := range r.git.env() {
			env[k] = v
		}
		env["CAPTF_RIG_TIER"] = "e2e"
	}
	if tier == "capi" {
		clusterctl, err := r.startCAPI()
		if err != nil {
			return err
		}
		env["CAPTF_RIG_CLUSTERCTL"] = clusterctl
		env["CAPTF_RIG_CAPI_SRC"] = os.Getenv("RIG_CAPI_SRC")
		env["CAPTF_RIG_CERT_MANAGER_SRC"] = os.Getenv("RIG_CERT_MANAGER_SRC")
		env["CAPTF_RIG_TIER"] = "capi"
	}
	if tier == "install" {
		// Cluster API is built, not run: the install tests run clusterctl.
		if err := r.startCertManager(); err != nil {
			return err
		}
		bin := os.Getenv("RIG_CAPI_BIN")
		env["CAPTF_RIG_CLUSTERCTL"] = filepath.Join(bin, "clusterctl")
		env["CAPTF_RIG_CAPI_MANAGER"] = filepath.Join(bin, "capi-manager")
		env["CAPTF_RIG_CAPI_SRC"] = os.Getenv("RIG_CAPI_SRC")
		env["CAPTF_RIG_CERT_MANAGER_SRC"] = os.Getenv("RIG_CERT_MANAGER_SRC")
		env["CAPTF_RIG_TIER"] = "install"
	}
	return writeEnv(r.l.p("env"), env)
}

func writeEnv(path string, env map[string]string) error {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s=%q\n", k, env[k])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// retryPorts runs start with fresh ports up to three times, because a port
// picked as free can be taken before the component binds it.
func retryPorts(start func() error) error {
	var err error
	for i := 0; i < 3; i++ {
		if err = start(); err == nil || !strings.Contains(err.Error(), "port already in use") {
			return err
		}
	}
	return err
}

func (r *rig) startEtcd() error {
	return retryPorts(func() error {
		client, err1 := freePort()
		peer, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		data := r.l.p("etcd")
		r.etcdArgs = []string{
			"--data-dir=" + data, "--name=rig",
			fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", client),
			fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", client),
			fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", peer),
			fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", peer),
			fmt.Sprintf("--initial-cluster=rig=http://127.0.0.1:%d", peer),
			"--unsafe-no-fsync=true", "--quota-backend-bytes=8589934592",
		}
		r.apiArgs = []string{fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", client)}
		return r.launchEtcd(client)
	})
}

// launchEtcd starts etcd with r.etcdArgs and waits for /health.
func (r *rig) launchEtcd(client int) error {
	c, err := startComponent(r.l.logs(), "etcd", r.bins.etcd, r.etcdArgs, nil)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/health", client)
	if err := c.waitReady(60*time.Second, func() error { return httpOK(http.DefaultClient, url) }); err != nil {
		c.stop(5 * time.Second)
		return err
	}
	r.etcd = c
	// What compact etcd reaches (cmdCompact).
	if err := os.WriteFile(r.l.p("etcd.url"), []byte(fmt.Sprintf("http://127.0.0.1:%d\n", client)), 0o644); err != nil {
		return err
	}
	bumpGeneration(r.l.p("etcd.generation"))
	return nil
}

// restartEtcd stops etcd (SIGTERM, then SIGKILL after 10s) and starts it
// again on the same ports and data; the API server reconnects by itself.
func (r *rig) restartEtcd() error {
	fmt.Println("rig: restarting etcd")
	r.resumeEtcd()
	r.etcd.stop(10 * time.Second)
	var client int
	for _, a := range r.etcdArgs {
		if strings.HasPrefix(a, "--advertise-client-urls=http://127.0.0.1:") {
			client, _ = strconv.Atoi(strings.TrimPrefix(a, "--advertise-client-urls=http://127.0.0.1:"))
		}
	}
	return r.launchEtcd(client)
}

// resumeEtcd continues a paused etcd (SIGCONT); nothing when it runs.
func (r *rig) resumeEtcd() {
	if !r.etcdPaused {
		return
	}
	r.etcdPaused = false
	if !r.etcd.exited() {
		_ = syscall.Kill(-r.etcd.cmd.Process.Pid, syscall.SIGCONT)
	}
	fmt.Println("rig: etcd resumed")
}

// takeRequest reads and removes a request file of a command: its number
// of seconds (0 when there is none).
func takeRequest(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	os.Remove(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// stopRegistry stops the registry for a stop request; false when it is
// already stopped or the tier has none.
func (r *rig) stopRegistry() bool {
	if r.reg == nil || r.regStopped || r.reg.exited() {
		return false
	}
	fmt.Println("rig: stopping the registry")
	r.reg.stop(5 * time.Second)
	r.regStopped = true
	bumpGeneration(r.l.p("registry.stopped"))
	return true
}

// restartRegistry starts the stopped registry again on the same port and
// storage and waits until it serves /v2/.
func (r *rig) restartRegistry() error {
	if !r.regStopped {
		return nil
	}
	r.regStopped = false
	fmt.Println("rig: starting the registry again")
	return r.launchRegistry()
}

// bumpGeneration adds one to the number in path (0 when missing): how a
// command waiting on the supervisor sees that it acted.
func bumpGeneration(path string) {
	n := 0
	if b, err := os.ReadFile(path); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	_ = os.WriteFile(path, []byte(strconv.Itoa(n+1)), 0o644)
}

func (r *rig) startAPIServer() error {
	return retryPorts(func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		r.apiPort = port
		return r.launchAPIServer()
	})
}

// launchAPIServer starts kube-apiserver on r.apiPort and waits for /readyz.
func (r *rig) launchAPIServer() error {
	p := r.pki
	args := append([]string{
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", r.apiPort),
		"--cert-dir=" + r.l.p("apiserver-certs"),
		"--tls-cert-file=" + p.path("apiserver.crt"), "--tls-private-key-file=" + p.path("apiserver.key"),
		"--client-ca-file=" + p.path("ca.crt"),
		fmt.Sprintf("--service-account-issuer=https://127.0.0.1:%d", r.apiPort),
		"--service-account-key-file=" + p.path("sa.pub"),
		"--service-account-signing-key-file=" + p.path("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24", "--authorization-mode=Node,RBAC",
		"--allow-privileged=true", "--endpoint-reconciler-type=none",
		// Webhooks and the services proxy dial a Service's endpoints, not its
		// ClusterIP: the rig has no kube-proxy (network.go).
		"--enable-aggregator-routing=true",
		"--profiling=false", "--storage-media-type=application/json",
	}, r.apiArgs...)
	c, err := startComponent(r.l.logs(), "kube-apiserver", r.bins.apiserver, args, nil)
	if err != nil {
		return err
	}
	client, err := r.adminHTTP()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", r.apiPort)
	if err := c.waitReady(120*time.Second, func() error { return httpOK(client, url) }); err != nil {
		c.stop(5 * time.Second)
		return err
	}
	r.api = c
	bumpGeneration(r.l.p("apiserver.generation"))
	return nil
}

func (r *rig) restartAPIServer() error {
	fmt.Println("rig: restarting kube-apiserver")
	r.api.stop(10 * time.Second)
	return r.launchAPIServer()
}

func (r *rig) adminHTTP() (*http.Client, error) {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(r.pki.path("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(r.pki.path("admin.crt"), r.pki.path("admin.key"))
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}, nil
}

var httpPlain = &http.Client{Timeout: 5 * time.Second}

func httpOK(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// kubeconfig renders a kubeconfig for the client pair NAME.crt/NAME.key.
func kubeconfig(p *pki, server, name string) (string, error) {
	ca, err1 := os.ReadFile(p.path("ca.crt"))
	crt, err2 := os.ReadFile(p.path(name + ".crt"))
	key, err3 := os.ReadFile(p.path(name + ".key"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return "", err
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: rig
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: rig
  context: {cluster: rig, user: %s, namespace: default}
current-context: rig
`, server, b64(ca), name, b64(crt), b64(key), name), nil
}

func (r *rig) writeKubeconfigs() error {
	server := fmt.Sprintf("https://127.0.0.1:%d", r.apiPort)
	kc, err := kubeconfig(r.pki, server, "admin")
	if err != nil {
		return err
	}
	return os.WriteFile(r.l.p("kubeconfig"), []byte(kc), 0o600)
}

func (r *rig) startKCM() error {
	c, err := startComponent(r.l.logs(), "kube-controller-manager", r.bins.kcm, []string{
		"--kubeconfig=" + r.l.p("kubeconfig"),
		"--authentication-kubeconfig=" + r.l.p("kubeconfig"),
		"--authorization-kubeconfig=" + r.l.p("kubeconfig"),
		"--leader-elect=false",
		"--controllers=job-controller,garbage-collector-controller,namespace-controller," +
			"serviceaccount-controller,serviceaccount-token-controller," +
			"root-ca-certificate-publisher-controller,ttl-after-finished-controller," +
			// Deployments and the Services in front of them (pod networks: network.go).
			"deployment-controller,replicaset-controller,endpoints-controller,endpointslice-controller," +
			// Cluster API's manager ClusterRole is aggregated.
			"clusterrole-aggregation-controller",
		"--service-account-private-key-file=" + r.pki.path("sa.key"),
		"--root-ca-file=" + r.pki.path("ca.crt"),
		"--use-service-account-credentials=false",
		"--bind-address=127.0.0.1", "--secure-port=0",
		"--concurrent-job-syncs=10", "--concurrent-gc-syncs=20",
	}, nil)
	if err != nil {
		return err
	}
	// Ready when the default ServiceAccount exists in "default": the
	// ServiceAccount admission plugin needs it before it admits a pod.
	client, err := r.adminHTTP()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/api/v1/namespaces/default/serviceaccounts/default", r.apiPort)
	if err := c.waitReady(60*time.Second, func() error { return httpOK(client, url) }); err != nil {
		c.stop(5 * time.Second)
		return err
	}
	r.kcm = c
	return nil
}

func (r *rig) startRegistry() (string, error) {
	var addr string
	err := retryPorts(func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
		cfg := r.l.p("registry.yml")
		conf := fmt.Sprintf(`version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: %s}
  delete: {enabled: true}
http:
  addr: %s
`, r.l.p("registry"), addr)
		if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
			return err
		}
		r.regConfig = cfg
		return r.launchRegistry()
	})
	return addr, err
}

// launchRegistry starts the registry with r.regConfig and waits for /v2/.
func (r *rig) launchRegistry() error {
	c, err := startComponent(r.l.logs(), "registry", r.bins.registry, []string{"serve", r.regConfig}, nil)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(r.regConfig)
	if err != nil {
		return err
	}
	addr := ""
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "addr: "); ok {
			addr = v
		}
	}
	url := "http://" + addr + "/v2/"
	if err := c.waitReady(30*time.Second, func() error { return httpOK(http.DefaultClient, url) }); err != nil {
		c.stop(5 * time.Second)
		return err
	}
	r.reg = c
	return nil
}

// stop tears everything down, pods first, and removes the bulky data; the
// logs stay.
func (r *rig) stop() {
	if r.kubelet != nil {
		r.kubelet.shutdown()
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.capi.stop(5 * time.Second)
	r.certManager.stop(5 * time.Second)
	r.kcm.stop(5 * time.Second)
	r.reg.stop(5 * time.Second)
	r.git.stop()
	r.api.stop(10 * time.Second)
	r.resumeEtcd()
	r.etcd.stop(10 * time.Second)
	os.Remove(r.l.readyFile())
	os.Remove(r.l.pidFile())
	for _, d := range []string{"etcd", "pods", "images", "registry"} {
		os.RemoveAll(r.l.p(d))
	}
	fmt.Println("rig: stopped")
}

// cmdUser writes a kubeconfig for a user (no rights until RBAC grants them).
func cmdUser(args []string) error {
	fs := flag.NewFlagSet("user", flag.ExitOnError)
	dir := fs.String("dir", "", "the rig's private directory")
	name := fs.String("name", "", "user name (the certificate's CN)")
	var groups multiFlag
	fs.Var(&groups, "group", "a group (the certificate's O); repeatable")
	_ = fs.Parse(args)
	if *dir == "" || *name == "" {
		return errors.New("user: --dir and --name are required")
	}
	l := layout{*dir}
	p, err := loadPKI(l.pki())
	if err != nil {
		return err
	}
	file := "user-" + *name
	if err := p.issue(file, *name, groups, false, nil, nil); err != nil {
		return err
	}
	b, err := os.ReadFile(l.p("env"))
	if err != nil {
		return fmt.Errorf("user: the rig in %s is not up: %v", *dir, err)
	}
	server := ""
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "export CAPTF_RIG_SERVER="); ok {
			server, _ = strconv.Unquote(v)
		}
	}
	kc, err := kubeconfig(p, server, file)
	if err != nil {
		return err
	}
	out := l.p("users", *name+".kubeconfig")
	if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(kc), 0o600); err != nil {
		return err
	}
	fmt.Println(out)
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
