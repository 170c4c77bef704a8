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

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// cmdImage builds a one-layer image from a directory and pushes it: the way
// the tests make module and runner images without a container engine.
func cmdImage(args []string) error {
	if len(args) < 1 || args[0] != "push" {
		return errors.New("image: only 'push' is supported")
	}
	fset := flag.NewFlagSet("image push", flag.ExitOnError)
	rootfs := fset.String("rootfs", "", "directory that becomes the image's filesystem")
	ref := fset.String("ref", "", "REGISTRY/REPO:TAG")
	entry := fset.String("entrypoint", "", "comma-separated entrypoint")
	var env multiFlag
	fset.Var(&env, "env", "K=V for the image config; repeatable")
	_ = fset.Parse(args[1:])
	if *rootfs == "" || *ref == "" {
		return errors.New("image push: --rootfs and --ref are required")
	}
	var entrypoint []string
	if *entry != "" {
		entrypoint = strings.Split(*entry, ",")
	}
	repo, digest, err := pushDir(*rootfs, *ref, entrypoint, env)
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", repo, digest)
	return nil
}

// pushDir tars ROOTFS deterministically (sorted, owner 0, mtime 0) into one
// layer of an OCI image and pushes it over plain HTTP (the rig's registry
// listens on loopback only).
func pushDir(rootfs, ref string, entrypoint, env []string) (string, v1.Hash, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("image push: bad reference %q: %v", ref, err)
	}
	layerTar, err := tarDir(rootfs)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("image push: reading %s: %v", rootfs, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return "", v1.Hash{}, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return "", v1.Hash{}, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Entrypoint = entrypoint
	cfg.Config.Env = env
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", v1.Hash{}, err
	}
	if err := remote.Write(r, img); err != nil {
		return "", v1.Hash{}, fmt.Errorf("image push: %s: %v", ref, err)
	}
	digest, err := img.Digest()
	return r.Context().Name(), digest, err
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
}

// pulled is an unpacked image.
type pulled struct {
	rootfs string
	config v1.Config
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
	return &pulled{rootfs: filepath.Join(root, "rootfs"), config: cfg.Config}, nil
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
