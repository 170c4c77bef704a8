package main

// The rig's Git server (e2e tier and up), for the tests of Git module
// sources: bare repositories under DIR/git/repos, served
//
//   - over HTTPS by Debian's `git http-backend` (CGI) behind HTTP basic auth
//     with one random user and password per rig, on a serving certificate of
//     the rig's CA. Authenticated ref advertisements and upload-pack POSTs are
//     counted per repository and served as JSON at GET /_counts;
//   - over SSH by Debian's sshd, which accepts only the generated client key
//     and lets it run git-upload-pack on the same repositories by absolute
//     path.
//
// Tests create and change the repositories through the filesystem
// (test/rig/git_repo.h); neither server accepts pushes.

import (
	"bufio"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	gitHTTPBackend = "/usr/lib/git-core/git-http-backend"
	sshdBinary     = "/usr/sbin/sshd"
)

// gitCounts is what GET /_counts reports for one repository.
type gitCounts struct {
	// GET <repo>.git/info/refs?service=git-upload-pack: one per ls-remote
	// or fetch.
	RefAdvertisements int `json:"ref_advertisements"`
	// POST <repo>.git/git-upload-pack: the fetch's negotiation and pack
	// (protocol v2 clients such as the git CLI also POST their ls-refs).
	UploadPacks int `json:"upload_packs"`
}

type gitServer struct {
	repos          string // DIR/git/repos
	sshDir         string // DIR/git/ssh: keys, sshd_config, known_hosts
	user, password string
	login          string // the SSH login: the user the rig runs as
	httpsPort      int
	sshPort        int

	https *http.Server
	cgi   *cgi.Handler
	log   *log.Logger
	sshd  *component

	mu     sync.Mutex
	counts map[string]*gitCounts // by repository name, without ".git"
}

func (g *gitServer) knownHosts() string { return filepath.Join(g.sshDir, "known_hosts") }
func (g *gitServer) clientKey() string  { return filepath.Join(g.sshDir, "client_ed25519") }

// startGit starts both servers on fresh repositories and keys.
func (r *rig) startGit() error {
	root := r.l.p("git")
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	g := &gitServer{repos: filepath.Join(root, "repos"), sshDir: filepath.Join(root, "ssh"),
		counts: map[string]*gitCounts{}}
	if err := errors.Join(os.MkdirAll(g.repos, 0o755), os.MkdirAll(g.sshDir, 0o700)); err != nil {
		return err
	}
	u, err := user.Current()
	if err != nil {
		return err
	}
	g.login, g.user, g.password = u.Username, "rig-"+randomHex(4), randomHex(16)
	r.git = g // stopped with the rig, even when half started
	if err := g.serveHTTPS(r.l.logs(), r.pki); err != nil {
		return fmt.Errorf("the Git HTTPS server did not start: %v; see %s", err,
			filepath.Join(r.l.logs(), "git-https.log"))
	}
	return g.startSSHD(r.l.logs())
}

func (g *gitServer) env() map[string]string {
	return map[string]string{
		"CAPTF_RIG_GIT_HTTPS":       fmt.Sprintf("https://127.0.0.1:%d", g.httpsPort),
		"CAPTF_RIG_GIT_USER":        g.user,
		"CAPTF_RIG_GIT_PASSWORD":    g.password,
		"CAPTF_RIG_GIT_REPOS":       g.repos,
		"CAPTF_RIG_GIT_SSH":         fmt.Sprintf("ssh://%s@127.0.0.1:%d", g.login, g.sshPort),
		"CAPTF_RIG_GIT_SSH_KEY":     g.clientKey(),
		"CAPTF_RIG_GIT_KNOWN_HOSTS": g.knownHosts(),
	}
}

func (g *gitServer) stop() {
	if g == nil {
		return
	}
	if g.https != nil {
		_ = g.https.Close()
	}
	if g.sshd != nil && !g.sshd.exited() {
		killDescendants(g.sshd.cmd.Process.Pid)
	}
	g.sshd.stop(5 * time.Second)
}

// killDescendants SIGKILLs every descendant of pid. sshd's
// per-connection children leave its process group (setsid), so stopping
// sshd alone would leave open sessions and their git-upload-pack behind.
func killDescendants(pid int) {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid …", where comm may hold spaces and parentheses.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], child)
	}
	var kill func(int)
	kill = func(p int) {
		for _, c := range children[p] {
			_ = syscall.Kill(c, syscall.SIGKILL)
			kill(c)
		}
	}
	kill(pid)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

// serveHTTPS listens on a loopback port (the listener is ours, so no port
// race) and checks that a client trusting the rig's CA gets through.
func (g *gitServer) serveHTTPS(logs string, p *pki) error {
	if _, err := os.Stat(gitHTTPBackend); err != nil {
		return fmt.Errorf("%s is missing (Debian's git; run scripts/bootstrap.sh)", gitHTTPBackend)
	}
	if err := p.issue("git", "captf-rig-git", nil, true, []string{"localhost"},
		[]net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(p.path("git.crt"), p.path("git.key"))
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(logs, "git-https.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	g.log = log.New(f, "", log.LstdFlags|log.Lmicroseconds)
	g.cgi = &cgi.Handler{
		Path:   gitHTTPBackend,
		Root:   "/",
		Env:    []string{"GIT_PROJECT_ROOT=" + g.repos, "GIT_HTTP_EXPORT_ALL=1"},
		Stderr: f,
		Logger: g.log,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	g.httpsPort = ln.Addr().(*net.TCPAddr).Port
	g.https = &http.Server{Handler: g, ErrorLog: g.log, ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() {
		if err := g.https.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Printf("serve: %v", err)
		}
	}()
	client, err := caClient(p)
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/_counts", g.httpsPort), nil)
	req.SetBasicAuth(g.user, g.password)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /_counts: HTTP %d", resp.StatusCode)
	}
	return nil
}

// caClient trusts the rig's CA and nothing else.
func caClient(p *pki) (*http.Client, error) {
	ca, err := os.ReadFile(p.path("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}

// ServeHTTP checks the credentials, counts, and hands the request to git
// http-backend. Only authenticated requests count: a client's first,
// credential-less request (answered 401) is not a second ls-remote.
func (g *gitServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() { g.log.Printf("%s %s %d", req.Method, req.URL.RequestURI(), sw.status) }()
	user, password, ok := req.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(g.user)) != 1 ||
		subtle.ConstantTimeCompare([]byte(password), []byte(g.password)) != 1 {
		sw.Header().Set("WWW-Authenticate", `Basic realm="captf-rig-git"`)
		http.Error(sw, "authentication required", http.StatusUnauthorized)
		return
	}
	if req.URL.Path == "/_counts" {
		g.mu.Lock()
		b, _ := json.Marshal(g.counts)
		g.mu.Unlock()
		sw.Header().Set("Content-Type", "application/json")
		_, _ = sw.Write(b)
		return
	}
	if i := strings.Index(req.URL.Path, ".git/"); i > 0 {
		repo, rest := strings.TrimPrefix(req.URL.Path[:i], "/"), req.URL.Path[i+len(".git/"):]
		switch {
		case req.Method == http.MethodGet && rest == "info/refs" &&
			req.URL.Query().Get("service") == "git-upload-pack":
			g.count(repo, func(c *gitCounts) { c.RefAdvertisements++ })
		case req.Method == http.MethodPost && rest == "git-upload-pack":
			g.count(repo, func(c *gitCounts) { c.UploadPacks++ })
		}
	}
	g.cgi.ServeHTTP(sw, req)
}

func (g *gitServer) count(repo string, add func(*gitCounts)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.counts[repo]
	if c == nil {
		c = &gitCounts{}
		g.counts[repo] = c
	}
	add(c)
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// startSSHD generates the host and client keys and runs sshd on a loopback
// port. The client key may only log in as the rig's user and run commands
// (no pty, no forwarding); git runs `git-upload-pack '/abs/path/repo.git'`.
func (g *gitServer) startSSHD(logs string) error {
	if _, err := os.Stat(sshdBinary); err != nil {
		return fmt.Errorf("%s is missing (Debian's openssh-server; run scripts/bootstrap.sh)", sshdBinary)
	}
	host := filepath.Join(g.sshDir, "host_ed25519")
	for file, comment := range map[string]string{host: "captf-rig-git-host", g.clientKey(): "captf-rig-git-client"} {
		out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ssh-keygen %s: %v: %s", file, err, strings.TrimSpace(string(out)))
		}
	}
	clientPub, err1 := os.ReadFile(g.clientKey() + ".pub")
	hostPub, err2 := os.ReadFile(host + ".pub")
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	keys := filepath.Join(g.sshDir, "authorized_keys")
	if err := os.WriteFile(keys, append([]byte("restrict "), clientPub...), 0o600); err != nil {
		return err
	}
	hostKey := strings.Fields(string(hostPub)) // type, key, comment
	// sshd's privilege separation directory, which Debian's service creates.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		return err
	}
	return retryPorts(func() error {
		port, err := freePort()
		if err != nil {
			return err
		}
		cfg := filepath.Join(g.sshDir, "sshd_config")
		conf := fmt.Sprintf(`ListenAddress 127.0.0.1:%d
HostKey %s
PidFile %s
AuthorizedKeysFile %s
AllowUsers %s
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitTTY no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PermitUserEnvironment no
AcceptEnv GIT_PROTOCOL
LogLevel INFO
`, port, host, filepath.Join(g.sshDir, "sshd.pid"), keys, g.login)
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			return err
		}
		c, err := startComponent(logs, "sshd", sshdBinary, []string{"-D", "-e", "-f", cfg}, nil)
		if err != nil {
			return err
		}
		if err := c.waitReady(30*time.Second, func() error { return sshBanner(port) }); err != nil {
			c.stop(5 * time.Second)
			return err
		}
		g.sshd, g.sshPort = c, port
		line := fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, hostKey[0], hostKey[1])
		return os.WriteFile(g.knownHosts(), []byte(line), 0o644)
	})
}

// sshBanner is nil once sshd greets on port.
func sshBanner(port int) error {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "SSH-2.0-") {
		return fmt.Errorf("not an SSH server: %q", line)
	}
	return nil
}
