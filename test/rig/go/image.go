package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/compression"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
)

// cmdImage builds images from directories and pushes them: the way the tests
// make module and runner images without a container engine.
//
//	image push --rootfs D --ref R [--entrypoint a,b] [--cmd a,b] [--env K=V]...
//	           [--label K=V]... [--user U] [--platform os/arch[/variant]]
//	           [--compression gzip|zstd] [--format oci|docker]
//	image index --ref R [--format oci|docker] [--unknown REF] REF...
//
// `index` pushes an index (Docker: a manifest list) of already pushed images,
// each described by the platform of its config; --unknown adds an image as an
// unknown/unknown entry, the way build tools attach attestations.
func cmdImage(args []string) error {
	if len(args) < 1 || (args[0] != "push" && args[0] != "index") {
		return errors.New("image: 'push' or 'index' is required")
	}
	if args[0] == "index" {
		return cmdImageIndex(args[1:])
	}
	fset := flag.NewFlagSet("image push", flag.ExitOnError)
	var opts pushOptions
	rootfs := fset.String("rootfs", "", "directory that becomes the image's filesystem")
	ref := fset.String("ref", "", "REGISTRY/REPO:TAG")
	entry := fset.String("entrypoint", "", "comma-separated entrypoint")
	cmd := fset.String("cmd", "", "comma-separated cmd")
	fset.Var(&opts.env, "env", "K=V for the image config; repeatable")
	fset.Var(&opts.labels, "label", "K=V label for the image config; repeatable")
	fset.StringVar(&opts.user, "user", "", "the config's User")
	fset.StringVar(&opts.platform, "platform", "linux/amd64", "os/arch[/variant] of the config")
	fset.StringVar(&opts.compression, "compression", "gzip", "layer compression: gzip or zstd")
	fset.StringVar(&opts.format, "format", "oci", "media types: oci or docker")
	_ = fset.Parse(args[1:])
	if *rootfs == "" || *ref == "" {
		return errors.New("image push: --rootfs and --ref are required")
	}
	if *entry != "" {
		opts.entrypoint = strings.Split(*entry, ",")
	}
	if *cmd != "" {
		opts.cmd = strings.Split(*cmd, ",")
	}
	repo, digest, err := pushDirWith(*rootfs, *ref, opts)
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", repo, digest)
	return nil
}

// pushOptions shape the pushed image beyond its filesystem.
type pushOptions struct {
	entrypoint, cmd []string
	env, labels     multiFlag
	user            string
	platform        string // os/arch[/variant]; "" is linux/amd64
	compression     string // gzip (default) or zstd
	format          string // oci (default) or docker
}

// pushDir tars ROOTFS deterministically (sorted, owner 0, mtime 0) into one
// layer of an OCI image and pushes it over plain HTTP (the rig's registry
// listens on loopback only).
func pushDir(rootfs, ref string, entrypoint, env []string) (string, v1.Hash, error) {
	return pushDirWith(rootfs, ref, pushOptions{entrypoint: entrypoint, env: env})
}

func pushDirWith(rootfs, ref string, opts pushOptions) (string, v1.Hash, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("image push: bad reference %q: %v", ref, err)
	}
	docker := opts.format == "docker"
	if opts.format != "" && opts.format != "oci" && !docker {
		return "", v1.Hash{}, fmt.Errorf("image push: unknown --format %q", opts.format)
	}
	layerTar, err := tarDir(rootfs)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("image push: reading %s: %v", rootfs, err)
	}
	layerOpts := []tarball.LayerOption{tarball.WithMediaType(types.OCILayer)}
	switch opts.compression {
	case "", "gzip":
		if docker {
			layerOpts = []tarball.LayerOption{tarball.WithMediaType(types.DockerLayer)}
		}
	case "zstd":
		if docker {
			return "", v1.Hash{}, errors.New("image push: zstd layers need --format oci")
		}
		layerOpts = []tarball.LayerOption{tarball.WithMediaType(types.OCILayerZStd),
			tarball.WithCompression(compression.ZStd)}
	default:
		return "", v1.Hash{}, fmt.Errorf("image push: unknown --compression %q", opts.compression)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, layerOpts...)
	if err != nil {
		return "", v1.Hash{}, err
	}
	manifestType, configType := types.OCIManifestSchema1, types.OCIConfigJSON
	if docker {
		manifestType, configType = types.DockerManifestSchema2, types.DockerConfigJSON
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, manifestType), layer)
	if err != nil {
		return "", v1.Hash{}, err
	}
	img = mutate.ConfigMediaType(img, configType)
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	platform := opts.platform
	if platform == "" {
		platform = "linux/amd64"
	}
	parts := strings.Split(platform, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return "", v1.Hash{}, fmt.Errorf("image push: bad --platform %q", platform)
	}
	cfg.OS, cfg.Architecture = parts[0], parts[1]
	if len(parts) == 3 {
		cfg.Variant = parts[2]
	}
	cfg.Config.Entrypoint = opts.entrypoint
	cfg.Config.Cmd = opts.cmd
	cfg.Config.Env = opts.env
	cfg.Config.User = opts.user
	if len(opts.labels) > 0 {
		cfg.Config.Labels = map[string]string{}
		for _, kv := range opts.labels {
			k, v, _ := strings.Cut(kv, "=")
			cfg.Config.Labels[k] = v
		}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", v1.Hash{}, err
	}
	if err := remote.Write(r, img); err != nil {
		return "", v1.Hash{}, fmt.Errorf("image push: %s: %v", ref, err)
	}
	digest, err := img.Digest()
	return r.Context().Name(), digest, err
}

// cmdImageIndex pushes an index of pushed images (see cmdImage).
func cmdImageIndex(args []string) error {
	fset := flag.NewFlagSet("image index", flag.ExitOnError)
	ref := fset.String("ref", "", "REGISTRY/REPO:TAG of the index")
	format := fset.String("format", "oci", "oci (an OCI index) or docker (a manifest list)")
	var unknown multiFlag
	fset.Var(&unknown, "unknown", "an image added as platform unknown/unknown; repeatable")
	_ = fset.Parse(args)
	if *ref == "" || fset.NArg() == 0 {
		return errors.New("image index: --ref and at least one image are required")
	}
	r, err := name.ParseReference(*ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("image index: bad reference %q: %v", *ref, err)
	}
	mt := types.OCIImageIndex
	if *format == "docker" {
		mt = types.DockerManifestList
	}
	idx := mutate.IndexMediaType(empty.Index, mt)
	add := func(src string, override *v1.Platform) error {
		sr, err := name.ParseReference(src, name.Insecure)
		if err != nil {
			return fmt.Errorf("image index: bad reference %q: %v", src, err)
		}
		img, err := remote.Image(sr)
		if err != nil {
			return fmt.Errorf("image index: %s: %v", src, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return err
		}
		platform := &v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
		if override != nil {
			platform = override
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: platform}})
		return nil
	}
	for _, src := range fset.Args() {
		if err := add(src, nil); err != nil {
			return err
		}
	}
	for _, src := range unknown {
		if err := add(src, &v1.Platform{OS: "unknown", Architecture: "unknown"}); err != nil {
			return err
		}
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		return fmt.Errorf("image index: %s: %v", *ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", r.Context().Name(), digest)
	return nil
}

func tarDir(root string) ([]byte, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		h.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// imageStore pulls images once per digest and unpacks them read-only.
type imageStore struct {
	dir   string
	mu    sync.Mutex
	locks map[string]*sync.Mutex
	// present holds the images pulled by digest reference: as a real
	// kubelet, the rig does not ask the registry again for one of them
	// unless the pull policy is Always (a tag is resolved at every pull).
	present map[string]*pulled
}

// pulled is an unpacked image.
type pulled struct {
	rootfs string
	config v1.Config
	// id is what a kubelet reports as the container's imageID: the
	// repository at the digest the reference resolved to (an index's own,
	// for a multi-platform image), whether the reference named a tag or a
	// digest.
	id string
}

// pullPolicy pulls REF as a kubelet does under policy: an image named by
// digest that is present is used without the registry unless the policy is
// Always.
func (s *imageStore) pullPolicy(ref string, policy corev1.PullPolicy) (*pulled, error) {
	byDigest := strings.Contains(ref, "@")
	if byDigest && policy != corev1.PullAlways {
		s.mu.Lock()
		img := s.present[ref]
		s.mu.Unlock()
		if img != nil {
			return img, nil
		}
	}
	img, err := s.pull(ref)
	if err == nil && byDigest {
		s.mu.Lock()
		if s.present == nil {
			s.present = map[string]*pulled{}
		}
		s.present[ref] = img
		s.mu.Unlock()
	}
	return img, err
}

// pull resolves REF for linux/amd64 and unpacks it under dir/<digest>. Plain
// HTTP is allowed only for loopback registries.
func (s *imageStore) pull(ref string) (*pulled, error) {
	// The rig reaches no network beyond loopback: refuse any other registry
	// rather than let a lookup leave the machine.
	if !strings.HasPrefix(ref, "127.0.0.1:") && !strings.HasPrefix(ref, "localhost:") {
		return nil, fmt.Errorf("image %q: the rig pulls only from a loopback registry (127.0.0.1:PORT/...)", ref)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return nil, fmt.Errorf("invalid image reference %q: %v", ref, err)
	}
	desc, err := remote.Head(r)
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %v", ref, err)
	}
	img, err := remote.Image(r, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*sync.Mutex{}
	}
	l := s.locks[digest.Hex]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[digest.Hex] = l
	}
	s.mu.Unlock()
	l.Lock()
	defer l.Unlock()
	root := filepath.Join(s.dir, digest.Hex)
	if _, err := os.Stat(root + "/.complete"); err != nil {
		os.RemoveAll(root)
		if err := unpack(mutate.Extract(img), filepath.Join(root, "rootfs")); err != nil {
			return nil, fmt.Errorf("unpacking %s: %v", ref, err)
		}
		if err := os.WriteFile(root+"/.complete", nil, 0o644); err != nil {
			return nil, err
		}
	}
	return &pulled{rootfs: filepath.Join(root, "rootfs"), config: cfg.Config,
		id: r.Context().Name() + "@" + desc.Digest.String()}, nil
}

// unpack writes a flattened image filesystem, refusing paths that escape it.
func unpack(rc io.ReadCloser, dest string) error {
	defer rc.Close()
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		clean := filepath.Clean("/" + h.Name)
		target := filepath.Join(dest, clean)
		if !strings.HasPrefix(target, dest) {
			return fmt.Errorf("layer entry %q escapes the root", h.Name)
		}
		mode := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		case tar.TypeLink:
			src := filepath.Join(dest, filepath.Clean("/"+h.Linkname))
			os.Remove(target)
			if err := os.Link(src, target); err != nil {
				return err
			}
		}
	}
}
