package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// Pod networking (docs/decisions/rig-pod-network.md). A pod that declares
// container ports, and is not hostNetwork, gets a network of its own:
//   - a named network namespace whose only interface is lo, so two pods
//     may both listen on :9443;
//   - a pod IP from the rig's /24, added to the host's lo, so EndpointSlices
//     (which refuse loopback addresses) can name it and the API server's
//     endpoint routing reaches it;
//   - forwarders the kubelet runs: every declared port, from podIP:port on
//     the host to 127.0.0.1:port in the pod, and every rig service the pod
//     may call (the API server, the registry), from 127.0.0.1:port in the pod
//     to the same address on the host.
// Pods without ports (the runner's Job pods) share the node's network.

// podSubnet is the rig's /24 of pod IPs: 10.X.Y.0/24 with X, Y taken from
// the API server's port, which no other running rig shares.
type podSubnet struct {
	prefix string // "10.X.Y."
	mu     sync.Mutex
	used   map[int]bool
	next   int
}

func newPodSubnet(apiPort int) *podSubnet {
	return &podSubnet{prefix: fmt.Sprintf("10.%d.%d.", 128+(apiPort>>8)&127, apiPort&255),
		used: map[int]bool{}, next: 2}
}

// take returns a free host number of the subnet.
func (s *podSubnet) take() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < 253; i++ {
		n := 2 + (s.next-2+i)%253
		if !s.used[n] {
			s.used[n], s.next = true, n+1
			return n, nil
		}
	}
	return 0, errors.New("the rig's pod subnet " + s.prefix + "0/24 is full")
}

func (s *podSubnet) give(n int) {
	s.mu.Lock()
	delete(s.used, n)
	s.mu.Unlock()
}

// sweep removes what a rig that died left behind: pod IPs of its subnet on
// lo and its network namespaces.
func (s *podSubnet) sweep(nsPrefix string) {
	out, _ := exec.Command("ip", "-o", "-4", "addr", "show", "dev", "lo").Output()
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, s.prefix) {
				_ = exec.Command("ip", "addr", "del", f, "dev", "lo").Run()
			}
		}
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), nsPrefix) {
			_ = exec.Command("ip", "netns", "del", e.Name()).Run()
		}
	}
}

// podNet is one pod's network.
type podNet struct {
	name, ip  string
	host      int // ip's host number in subnet
	subnet    *podSubnet
	mu        sync.Mutex
	listeners []net.Listener
}

func (n *podNet) path() string { return "/run/netns/" + n.name }

// needsNetwork is whether a pod gets a network of its own.
func needsNetwork(pod *corev1.Pod) bool {
	if pod.Spec.HostNetwork {
		return false
	}
	for _, c := range pod.Spec.Containers {
		if len(c.Ports) > 0 {
			return true
		}
	}
	return false
}

// openPodNet creates the namespace, the pod IP and the forwarders.
func openPodNet(s *podSubnet, name string, pod *corev1.Pod, hostPorts []int) (*podNet, error) {
	host, err := s.take()
	if err != nil {
		return nil, err
	}
	ip := s.prefix + strconv.Itoa(host)
	n := &podNet{name: name, ip: ip, host: host, subnet: s}
	run := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	_ = run("netns", "del", name)
	if err := run("netns", "add", name); err != nil {
		s.give(host)
		return nil, err
	}
	fail := func(err error) (*podNet, error) { n.close(); return nil, err }
	if err := run("-n", name, "link", "set", "lo", "up"); err != nil {
		return fail(err)
	}
	if err := run("addr", "add", ip+"/32", "dev", "lo"); err != nil {
		return fail(err)
	}
	for _, p := range hostPorts {
		addr := fmt.Sprintf("127.0.0.1:%d", p)
		var l net.Listener
		if err := inNetns(n.path(), func() (err error) { l, err = net.Listen("tcp", addr); return }); err != nil {
			return fail(fmt.Errorf("forwarding %s into the pod: %v", addr, err))
		}
		n.serve(l, func() (net.Conn, error) { return net.Dial("tcp", addr) })
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Protocol != "" && cp.Protocol != corev1.ProtocolTCP {
				continue
			}
			port := int(cp.ContainerPort)
			l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port))
			if err != nil {
				return fail(fmt.Errorf("serving port %d of the pod: %v", port, err))
			}
			n.serve(l, func() (net.Conn, error) { return n.dial(port) })
		}
	}
	return n, nil
}

// dial connects to 127.0.0.1:port inside the pod.
func (n *podNet) dial(port int) (c net.Conn, err error) {
	err = inNetns(n.path(), func() error {
		c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		return err
	})
	return c, err
}

// serve accepts on l until it is closed and pipes each connection to dial's.
func (n *podNet) serve(l net.Listener, dial func() (net.Conn, error)) {
	n.mu.Lock()
	n.listeners = append(n.listeners, l)
	n.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := dial()
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{}, 2)
				pipe := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					if tc, ok := dst.(*net.TCPConn); ok {
						_ = tc.CloseWrite()
					}
					done <- struct{}{}
				}
				go pipe(out, in)
				go pipe(in, out)
				<-done
				<-done
			}()
		}
	}()
}

// close stops the forwarders and removes the pod IP and the namespace.
func (n *podNet) close() {
	n.mu.Lock()
	for _, l := range n.listeners {
		_ = l.Close()
	}
	n.listeners = nil
	n.mu.Unlock()
	_ = exec.Command("ip", "addr", "del", n.ip+"/32", "dev", "lo").Run()
	_ = exec.Command("ip", "netns", "del", n.name).Run()
	n.subnet.give(n.host)
}

// inNetns runs fn on an OS thread that entered the namespace at path;
// sockets fn creates stay in that namespace. The thread returns to the
// rig's namespace before it is unlocked. It must not die instead: the rig's
// components get SIGKILL (Pdeathsig) when the thread that started them
// exits, and any thread may have been that one.
func inNetns(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(home)
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering %s: %v", path, err)
			return
		}
		err = fn()
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked and Go retires it with the goroutine
		errc <- err
	}()
	return <-errc
}
