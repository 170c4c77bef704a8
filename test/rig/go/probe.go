package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Readiness probes (docs/decisions/rig-pod-network.md): httpGet and
// tcpSocket, dialled inside the pod's network. Until the first success the
// prober tries every second (the real kubelet waits periodSeconds, which
// only slows tests); after it, every periodSeconds, with failureThreshold
// consecutive failures turning the container unready. Liveness and startup
// probes are not run: the rig never restarts a container for them.

// probeReadiness reports readiness changes of container c until stop closes.
func (k *kubelet) probeReadiness(ctx context.Context, w *podWorker, pod *corev1.Pod, c *corev1.Container,
	stop <-chan struct{}) {
	p := c.ReadinessProbe
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	threshold := int(max(p.FailureThreshold, 1))
	select {
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	case <-stop:
		return
	}
	ready, failures := false, 0
	for {
		err := k.probeOnce(ctx, w, c, p)
		switch {
		case err == nil && !ready:
			ready, failures = true, 0
			k.setReady(pod, c.Name, true)
		case err == nil:
			failures = 0
		case ready:
			if failures++; failures >= threshold {
				ready = false
				k.logf("%s/%s: readiness probe of %q failed: %v", pod.Namespace, pod.Name, c.Name, err)
				k.setReady(pod, c.Name, false)
			}
		}
		wait := period
		if !ready {
			wait = time.Second
		}
		select {
		case <-time.After(wait):
		case <-stop:
			return
		}
	}
}

func (k *kubelet) probeOnce(ctx context.Context, w *podWorker, c *corev1.Container, p *corev1.Probe) error {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	switch {
	case p.HTTPGet != nil:
		port, err := probePort(c, p.HTTPGet.Port)
		if err != nil {
			return err
		}
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true,
			DialContext: func(context.Context, string, string) (net.Conn, error) { return w.dial(port) }}
		scheme := "http"
		if p.HTTPGet.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, p.HTTPGet.Path), nil)
		if err != nil {
			return err
		}
		for _, h := range p.HTTPGet.HTTPHeaders {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode >= 400 {
			return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
		}
		return nil
	case p.TCPSocket != nil:
		port, err := probePort(c, p.TCPSocket.Port)
		if err != nil {
			return err
		}
		conn, err := w.dial(port)
		if err != nil {
			return err
		}
		return conn.Close()
	default:
		return nil // exec and gRPC probes are not run; the container counts as ready
	}
}

// probePort resolves a probe's port, by number or by the name of one of the
// container's ports.
func probePort(c *corev1.Container, port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("container %q has no port named %q", c.Name, port.StrVal)
}

// dial connects to a port of the pod: inside its network when it has one.
func (w *podWorker) dial(port int) (net.Conn, error) {
	if w.net != nil {
		return w.net.dial(port)
	}
	return net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
}

// setReady records a container's readiness and the pod conditions that
// follow from it.
func (k *kubelet) setReady(pod *corev1.Pod, name string, ready bool) {
	k.updateStatus(pod, func(s *corev1.PodStatus) {
		all := true
		for i := range s.ContainerStatuses {
			if s.ContainerStatuses[i].Name == name {
				s.ContainerStatuses[i].Ready = ready && s.ContainerStatuses[i].State.Running != nil
			}
			all = all && s.ContainerStatuses[i].Ready
		}
		all = all && len(s.ContainerStatuses) == len(pod.Spec.Containers)
		setCondition(s, corev1.ContainersReady, all, "")
		setCondition(s, corev1.PodReady, all, "")
	})
}
