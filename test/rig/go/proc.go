package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// component is one long-running process of the rig.
type component struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error
}

// startComponent runs bin with args, output appended to LOGDIR/NAME.log. The
// process gets its own process group and dies with the rig (PDEATHSIG), so a
// crashed rig leaves nothing behind.
func startComponent(logDir, name, bin string, args []string, env []string) (*component, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: the binary %s is missing (run test/rig/rig, which builds it)", name, bin)
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: cannot start %s: %v", name, bin, err)
	}
	c := &component{name: name, log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, nil
}

func (c *component) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (c *component) stop(grace time.Duration) {
	if c == nil || c.exited() {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// waitReady polls check until it succeeds, the process exits, or timeout.
// The error is one line: the cause and the log to read.
func (c *component) waitReady(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if c.exited() {
			return fmt.Errorf("%s exited during start-up (%v)%s; see %s", c.name, c.err, c.hint(), c.log)
		}
		if last = check(); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not become ready within %s (%v); see %s", c.name, timeout, last, c.log)
}

// hint names a port clash when the log shows one.
func (c *component) hint() string {
	b, _ := os.ReadFile(c.log)
	// Go components say "address already in use", sshd "Address already in use".
	if strings.Contains(strings.ToLower(string(b)), "address already in use") {
		return ": port already in use"
	}
	return ""
}

// freePort asks the kernel for a free loopback port. Another process can take
// it before the component binds it; start-up retries with fresh ports then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func pidAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}
