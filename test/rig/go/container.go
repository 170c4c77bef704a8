package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// materialise writes every volume of the pod under DIR/volumes/NAME and
// returns name → host path.
func (k *kubelet) materialise(ctx context.Context, w *podWorker, pod *corev1.Pod) (map[string]string, error) {
	vols := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(w.dir, "volumes", v.Name)
		vols[v.Name] = dir
		switch {
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return nil, err
			}
		case v.Secret != nil:
			if err := k.writeSecret(ctx, pod.Namespace, v.Secret.SecretName, v.Secret.Items,
				v.Secret.DefaultMode, v.Secret.Optional, dir); err != nil {
				return nil, fmt.Errorf("volume %q: %v", v.Name, err)
			}
		case v.ConfigMap != nil:
			if err := k.writeConfigMap(ctx, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items,
				v.ConfigMap.DefaultMode, v.ConfigMap.Optional, dir); err != nil {
				return nil, fmt.Errorf("volume %q: %v", v.Name, err)
			}
		case v.Projected != nil:
			if err := k.writeProjected(ctx, pod, v.Projected, dir); err != nil {
				return nil, fmt.Errorf("volume %q: %v", v.Name, err)
			}
		case v.DownwardAPI != nil:
			if err := writeDownward(pod, v.DownwardAPI.Items, dir); err != nil {
				return nil, fmt.Errorf("volume %q: %v", v.Name, err)
			}
		default:
			return nil, fmt.Errorf("volume %q: this rig supports emptyDir, secret, configMap, projected and downwardAPI only", v.Name)
		}
	}
	return vols, nil
}

func mode(m *int32, def os.FileMode) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return def
}

func writeItems(dir string, data map[string][]byte, items []corev1.KeyToPath, defMode *int32) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(items) == 0 {
		for key := range data {
			items = append(items, corev1.KeyToPath{Key: key, Path: key})
		}
	}
	for _, it := range items {
		val, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %q not found", it.Key)
		}
		p := filepath.Join(dir, filepath.Clean("/"+it.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, val, mode(it.Mode, mode(defMode, 0o644))); err != nil {
			return err
		}
		if err := os.Chmod(p, mode(it.Mode, mode(defMode, 0o644))); err != nil {
			return err
		}
	}
	return nil
}

func (k *kubelet) writeSecret(ctx context.Context, ns, name string, items []corev1.KeyToPath, defMode *int32, optional *bool, dir string) error {
	s, err := k.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("secret %q: %v", name, err)
	}
	return writeItems(dir, s.Data, items, defMode)
}

func (k *kubelet) writeConfigMap(ctx context.Context, ns, name string, items []corev1.KeyToPath, defMode *int32, optional *bool, dir string) error {
	cm, err := k.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("configmap %q: %v", name, err)
	}
	data := map[string][]byte{}
	for key, v := range cm.Data {
		data[key] = []byte(v)
	}
	for key, v := range cm.BinaryData {
		data[key] = v
	}
	return writeItems(dir, data, items, defMode)
}

// writeProjected handles the service-account token volume that admission
// adds to every pod (token, kube-root-ca.crt, namespace), and any other
// projection of Secrets, ConfigMaps and the downward API.
func (k *kubelet) writeProjected(ctx context.Context, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, dir string) error {
	for _, src := range p.Sources {
		switch {
		case src.ServiceAccountToken != nil:
			t := src.ServiceAccountToken
			req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
				ExpirationSeconds: t.ExpirationSeconds,
				BoundObjectRef:    &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
			}}
			if t.Audience != "" {
				req.Spec.Audiences = []string{t.Audience}
			}
			sa := pod.Spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			tok, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("token for service account %q: %v", sa, err)
			}
			if err := writeItems(dir, map[string][]byte{"t": []byte(tok.Status.Token)},
				[]corev1.KeyToPath{{Key: "t", Path: t.Path}}, p.DefaultMode); err != nil {
				return err
			}
		case src.ConfigMap != nil:
			if err := k.writeConfigMap(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, p.DefaultMode, src.ConfigMap.Optional, dir); err != nil {
				return err
			}
		case src.Secret != nil:
			if err := k.writeSecret(ctx, pod.Namespace, src.Secret.Name, src.Secret.Items, p.DefaultMode, src.Secret.Optional, dir); err != nil {
				return err
			}
		case src.DownwardAPI != nil:
			if err := writeDownward(pod, src.DownwardAPI.Items, dir); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeDownward(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, dir string) error {
	data := map[string][]byte{}
	var kp []corev1.KeyToPath
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI %q: only fieldRef is supported", it.Path)
		}
		v, err := fieldValue(pod, it.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		data[it.Path] = []byte(v)
		kp = append(kp, corev1.KeyToPath{Key: it.Path, Path: it.Path, Mode: it.Mode})
	}
	return writeItems(dir, data, kp, nil)
}

var labelRef = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.+)'\]$`)

func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return nodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.podIP", "status.hostIPs", "status.podIPs":
		return "127.0.0.1", nil
	}
	if m := labelRef.FindStringSubmatch(path); m != nil {
		if m[1] == "labels" {
			return pod.Labels[m[2]], nil
		}
		return pod.Annotations[m[2]], nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported by the rig", path)
}

// containerEnv resolves env and envFrom the way the kubelet does: image env
// first, then envFrom, then env (later wins), with $(VAR) expansion.
func (k *kubelet) containerEnv(ctx context.Context, pod *corev1.Pod, c *corev1.Container, img *pulled, base []string) ([]string, error) {
	vals := map[string]string{}
	var order []string
	set := func(key, v string) {
		if _, ok := vals[key]; !ok {
			order = append(order, key)
		}
		vals[key] = v
	}
	set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	set("HOSTNAME", pod.Name)
	for _, kv := range append(base, img.config.Env...) {
		key, v, _ := strings.Cut(kv, "=")
		set(key, v)
	}
	for _, ef := range c.EnvFrom {
		var data map[string]string
		switch {
		case ef.SecretRef != nil:
			s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, ef.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if ef.SecretRef.Optional != nil && *ef.SecretRef.Optional && apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("envFrom secret %q: %v", ef.SecretRef.Name, err)
			}
			data = map[string]string{}
			for key, v := range s.Data {
				data[key] = string(v)
			}
		case ef.ConfigMapRef != nil:
			cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ef.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if ef.ConfigMapRef.Optional != nil && *ef.ConfigMapRef.Optional && apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("envFrom configmap %q: %v", ef.ConfigMapRef.Name, err)
			}
			data = cm.Data
		}
		keys := make([]string, 0, len(data))
		for key := range data {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			set(ef.Prefix+key, data[key])
		}
	}
	for _, e := range c.Env {
		v := expand(e.Value, vals)
		if f := e.ValueFrom; f != nil {
			var err error
			switch {
			case f.SecretKeyRef != nil:
				var s *corev1.Secret
				s, err = k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, f.SecretKeyRef.Name, metav1.GetOptions{})
				if err == nil {
					b, ok := s.Data[f.SecretKeyRef.Key]
					if !ok && (f.SecretKeyRef.Optional == nil || !*f.SecretKeyRef.Optional) {
						err = fmt.Errorf("key %q not in secret %q", f.SecretKeyRef.Key, f.SecretKeyRef.Name)
					}
					v = string(b)
				} else if apierrors.IsNotFound(err) && f.SecretKeyRef.Optional != nil && *f.SecretKeyRef.Optional {
					continue
				}
			case f.ConfigMapKeyRef != nil:
				var cm *corev1.ConfigMap
				cm, err = k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, f.ConfigMapKeyRef.Name, metav1.GetOptions{})
				if err == nil {
					s, ok := cm.Data[f.ConfigMapKeyRef.Key]
					if !ok && (f.ConfigMapKeyRef.Optional == nil || !*f.ConfigMapKeyRef.Optional) {
						err = fmt.Errorf("key %q not in configmap %q", f.ConfigMapKeyRef.Key, f.ConfigMapKeyRef.Name)
					}
					v = s
				} else if apierrors.IsNotFound(err) && f.ConfigMapKeyRef.Optional != nil && *f.ConfigMapKeyRef.Optional {
					continue
				}
			case f.FieldRef != nil:
				v, err = fieldValue(pod, f.FieldRef.FieldPath)
			case f.ResourceFieldRef != nil:
				v = resourceValue(c, f.ResourceFieldRef)
			}
			if err != nil {
				return nil, fmt.Errorf("env %q: %v", e.Name, err)
			}
		}
		set(e.Name, v)
	}
	out := make([]string, 0, len(order))
	for _, key := range order {
		out = append(out, key+"="+vals[key])
	}
	return out, nil
}

func resourceValue(c *corev1.Container, r *corev1.ResourceFieldSelector) string {
	name := corev1.ResourceName(strings.TrimPrefix(strings.TrimPrefix(r.Resource, "limits."), "requests."))
	list := c.Resources.Limits
	if strings.HasPrefix(r.Resource, "requests.") {
		list = c.Resources.Requests
	}
	if q, ok := list[name]; ok {
		return q.String()
	}
	return "0"
}

var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// expand applies Kubernetes' $(VAR) rule: defined variables are replaced,
// undefined references stay as written, and $$ escapes a dollar.
func expand(s string, vals map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := vals[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		key, v, _ := strings.Cut(kv, "=")
		m[key] = v
	}
	return m
}

// runContainer runs one container to completion and returns its status.
func (k *kubelet) runContainer(ctx context.Context, w *podWorker, pod *corev1.Pod, c *corev1.Container,
	img *pulled, vols map[string]string, base []string, isInit bool) corev1.ContainerStatus {
	st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image,
		ContainerID: fmt.Sprintf("rig://%s/%s", pod.UID, c.Name)}
	if img != nil {
		st.ImageID = img.id
	}
	terminated := func(code int32, reason, msg string, started metav1.Time) corev1.ContainerStatus {
		st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: msg, StartedAt: started, FinishedAt: metav1.Now(),
			ContainerID: st.ContainerID}}
		return st
	}
	var env []string
	for {
		var err error
		if env, err = k.containerEnv(ctx, pod, c, img, base); err == nil {
			break
		}
		waiting := st
		waiting.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "CreateContainerConfigError", Message: err.Error()}}
		k.updateStatus(pod, func(s *corev1.PodStatus) {
			if isInit {
				putStatus(&s.InitContainerStatuses, waiting)
			} else {
				putStatus(&s.ContainerStatuses, waiting)
			}
		})
		select {
		case <-ctx.Done():
			return terminated(137, "Error", "", metav1.Now())
		case <-w.deleting:
			return terminated(137, "Error", "", metav1.Now())
		case <-time.After(2 * time.Second):
		}
	}
	args, root, termFile, err := k.bwrapArgs(w, pod, c, img, vols, envMap(env))
	if err != nil {
		return terminated(128, "StartError", err.Error(), metav1.Now())
	}
	if ctx.Err() != nil || closed(w.deleting) {
		return terminated(137, "Error", "", metav1.Now())
	}
	logPath := filepath.Join(w.dir, "logs", c.Name+".log")
	_ = os.MkdirAll(filepath.Dir(logPath), 0o755)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return terminated(128, "StartError", err.Error(), metav1.Now())
	}
	defer logf.Close()
	cmd := exec.Command(k.bwrap, args...)
	if w.net != nil {
		cmd = exec.Command("nsenter", append([]string{"--net=" + w.net.path(), "--", k.bwrap}, args...)...)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := metav1.Now()
	w.mu.Lock()
	err = cmd.Start()
	if err == nil {
		w.procs[c.Name] = cmd
	}
	w.mu.Unlock()
	if err != nil {
		return terminated(128, "StartError", err.Error(), started)
	}
	running := st
	running.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	t := true
	running.Started = &t
	running.Ready = !isInit && c.ReadinessProbe == nil
	stopProbe := make(chan struct{})
	defer close(stopProbe)
	if !isInit && c.ReadinessProbe != nil {
		go k.probeReadiness(ctx, w, pod, c, stopProbe)
	}
	k.updateStatus(pod, func(s *corev1.PodStatus) {
		if isInit {
			putStatus(&s.InitContainerStatuses, running)
			return
		}
		s.Phase = corev1.PodRunning
		putStatus(&s.ContainerStatuses, running)
		ready := true
		for _, cs := range s.ContainerStatuses {
			ready = ready && cs.Ready
		}
		setCondition(s, corev1.ContainersReady, ready, "")
		setCondition(s, corev1.PodReady, ready, "")
	})
	_ = cmd.Wait()
	w.mu.Lock()
	delete(w.procs, c.Name)
	w.mu.Unlock()
	code := int32(0)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		if ws.Signaled() {
			code = 128 + int32(ws.Signal())
		} else {
			code = int32(ws.ExitStatus())
		}
	}
	msg := readCapped(termFile, maxTermMsgContainer)
	if msg == "" && code != 0 && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
		msg = logTail(logPath)
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	if root != img.rootfs {
		os.RemoveAll(root)
	}
	return terminated(code, reason, msg, started)
}

func readCapped(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

func logTail(path string) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > fallbackLogLines {
		lines = lines[len(lines)-fallbackLogLines:]
	}
	s := strings.Join(lines, "\n")
	if len(s) > fallbackLogBytes {
		s = s[len(s)-fallbackLogBytes:]
	}
	return s
}

// bwrapArgs builds the sandbox: the image's filesystem as root (a private
// copy unless the root filesystem is read-only), /dev, /proc, a private /tmp,
// the volume mounts and the termination-message file.
func (k *kubelet) bwrapArgs(w *podWorker, pod *corev1.Pod, c *corev1.Container, img *pulled,
	vols map[string]string, env map[string]string) (args []string, root, termFile string, err error) {
	readOnly := c.SecurityContext != nil && c.SecurityContext.ReadOnlyRootFilesystem != nil &&
		*c.SecurityContext.ReadOnlyRootFilesystem
	root = img.rootfs
	if !readOnly {
		root = filepath.Join(w.dir, "rootfs", c.Name)
		os.RemoveAll(root)
		if err := os.MkdirAll(filepath.Dir(root), 0o755); err != nil {
			return nil, "", "", err
		}
		if out, err := exec.Command("cp", "-a", img.rootfs, root).CombinedOutput(); err != nil {
			return nil, "", "", fmt.Errorf("copying the image filesystem: %v: %s", err, out)
		}
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = "/dev/termination-log"
	}
	termFile = filepath.Join(w.dir, "termination", c.Name)
	_ = os.MkdirAll(filepath.Dir(termFile), 0o755)
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return nil, "", "", err
	}
	for _, dir := range []string{"/dev", "/proc"} {
		if err := ensureMountPoint(root, dir, ""); err != nil {
			return nil, "", "", err
		}
	}
	bindRoot := "--bind"
	if readOnly {
		bindRoot = "--ro-bind"
	}
	args = []string{bindRoot, root, "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", pod.Name, "--die-with-parent"}
	mounts := append([]corev1.VolumeMount{}, c.VolumeMounts...)
	sort.SliceStable(mounts, func(i, j int) bool { return len(mounts[i].MountPath) < len(mounts[j].MountPath) })
	// A private /tmp unless a volume is mounted there; first, so that
	// volumes mounted below /tmp land on it instead of under it.
	tmpMounted := false
	for _, m := range mounts {
		tmpMounted = tmpMounted || filepath.Clean(m.MountPath) == "/tmp"
	}
	if !tmpMounted {
		if err := ensureMountPoint(root, "/tmp", ""); err != nil {
			return nil, "", "", err
		}
		args = append(args, "--tmpfs", "/tmp")
	}
	for _, m := range mounts {
		src, ok := vols[m.Name]
		if !ok {
			return nil, "", "", fmt.Errorf("volumeMount %q names no volume", m.Name)
		}
		if m.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+expand(m.SubPath, env)))
		}
		if err := ensureMountPoint(root, m.MountPath, src); err != nil {
			return nil, "", "", err
		}
		flag := "--bind"
		if m.ReadOnly {
			flag = "--ro-bind"
		}
		args = append(args, flag, src, m.MountPath)
	}
	// The kubelet-managed /etc/hosts every pod gets, unless a volume is
	// mounted there: localhost resolves without DNS (a static runner's
	// resolver reads only this file).
	hostsMounted := false
	for _, m := range mounts {
		hostsMounted = hostsMounted || filepath.Clean(m.MountPath) == "/etc/hosts"
	}
	if !hostsMounted {
		hostsFile := filepath.Join(w.dir, "etc-hosts")
		if err := os.WriteFile(hostsFile, []byte(podHosts(pod)), 0o644); err != nil {
			return nil, "", "", err
		}
		if err := ensureMountPoint(root, "/etc/hosts", hostsFile); err != nil {
			return nil, "", "", err
		}
		args = append(args, "--ro-bind", hostsFile, "/etc/hosts")
	}
	if !strings.HasPrefix(termPath, "/dev/") {
		if err := ensureMountPoint(root, termPath, termFile); err != nil {
			return nil, "", "", err
		}
	}
	args = append(args, "--bind", termFile, termPath)
	wd := c.WorkingDir
	if wd == "" {
		wd = img.config.WorkingDir
	}
	if wd != "" {
		args = append(args, "--chdir", wd)
	}
	command, cargs := c.Command, c.Args
	if len(command) == 0 {
		command = img.config.Entrypoint
		if len(cargs) == 0 {
			cargs = img.config.Cmd
		}
	}
	argv := append(append([]string{}, command...), cargs...)
	if len(argv) == 0 {
		return nil, "", "", fmt.Errorf("container %q has no command and its image no entrypoint", c.Name)
	}
	for i := range argv {
		argv[i] = expand(argv[i], env)
	}
	return append(append(args, "--"), argv...), root, termFile, nil
}

// podHosts is the /etc/hosts the kubelet writes into a pod's containers.
func podHosts(pod *corev1.Pod) string {
	hosts := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if ip := pod.Status.PodIP; ip != "" && !pod.Spec.HostNetwork {
		hosts += ip + "\t" + pod.Name + "\n"
	}
	return hosts
}

// ensureMountPoint creates the mount point of PATH inside ROOT: a directory,
// or an empty file when SRC is a file. bubblewrap cannot create it on a
// read-only root.
func ensureMountPoint(root, path, src string) error {
	target := filepath.Join(root, filepath.Clean("/"+path))
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	isFile := false
	if src != "" {
		if fi, err := os.Stat(src); err == nil && !fi.IsDir() {
			isFile = true
		}
	}
	if !isFile {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return os.WriteFile(target, nil, 0o644)
}
