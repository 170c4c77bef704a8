"""clang-tidy over the first-party translation units, incremental.

The body of scripts/tidy.sh (see its header for the arguments). A TU is
checked again only when something that can change its findings changed:
clang-tidy's version, .clang-tidy, the flags this script passes (KEY_VERSION
for the rest of how it checks), the TU's compile command, the TU or any
header it includes. The header list is the one the build recorded
(`ninja -t deps`), so the build must be current for the TU to be cached:
a TU edited (or a header touched) since its object was built is checked and
not cached. A passing TU leaves an empty file under the cache directory named
after that hash; nothing else is cached, so a failure is always reported.
"""

import argparse
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

FIRST_PARTY = ("contract", "manager", "runner", "webhooks", "lint", "test", "bench")
# The folders --analyzer checks; test/.clang-tidy and bench/.clang-tidy turn
# the analyzer off.
PRODUCT = ("contract", "manager", "runner", "webhooks", "lint")
# scripts/tidy.sh sets it: the pinned clang-tidy of scripts/tidy-requirements.txt.
CLANG_TIDY = os.environ.get("CAPTF_CLANG_TIDY", "clang-tidy")
# Bump when a change to this script changes what a pass means; the flags
# below are part of the key already.
KEY_VERSION = "3"
# Cache entries not hit for this long are removed at the end of a run.
CACHE_MAX_AGE_S = 30 * 24 * 3600
# A line of a batch file (cmake/Unity.cmake): one source, from the root.
BATCH_MEMBER = re.compile(r'^#include "([^"]+)"$')
FINDING = re.compile(r"^(/[^:]+):(\d+):(\d+): (warning|error): (.*?)(?: \[([^\]]+)\])?$")
NOISE = re.compile(r"^\d+ (warning|error)s? (and \d+ errors? )?generated\.$")


def ere_escape(text):
    """Escapes text for clang-tidy's POSIX extended regular expressions."""
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", text)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="scripts/tidy.sh", description=__doc__.splitlines()[0])
    p.add_argument("build_dir", nargs="?", default=None, help="default: build/dev of this checkout")
    p.add_argument("--only", nargs="+", metavar="FILE", default=None,
                   help="check these sources (a header: every TU that includes it)")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--no-cache", action="store_true", help="check every TU (still records passes)")
    p.add_argument("--list", action="store_true", help="print the TUs a run would check, and stop")
    p.add_argument("--tidy-arg", action="append", default=[], metavar="ARG",
                   help="one more clang-tidy argument, e.g. --tidy-arg=--checks=-clang-analyzer-*")
    p.add_argument("--fix", action="store_true",
                   help="apply the fixes clang-tidy offers (clang-apply-replacements), then "
                        "report what is left")
    p.add_argument("--analyzer", action="store_true",
                   help="also run the static analyzer (clang-analyzer-*), on the product TUs "
                        "only; CI leaves it out (docs/decisions/tidy.md, \"The analyzer\")")
    p.add_argument("--times", metavar="FILE", default=None,
                   help="write each checked TU's seconds to FILE, slowest first")
    return p.parse_args(argv)


class Hasher:
    """SHA-256 of file contents, each file read once per run."""

    def __init__(self):
        self.digests = {}

    def file(self, path):
        digest = self.digests.get(path)
        if digest is None:
            try:
                with open(path, "rb") as f:
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
            except OSError:
                digest = "missing"
            self.digests[path] = digest
        return digest


def ninja_deps(build_dir):
    """Maps each object (a path relative to build_dir) to the files ninja recorded it read."""
    out = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True,
                         capture_output=True, text=True).stdout
    deps, current = {}, None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            target, _, info = line.partition(": ")
            current = None if "deps not found" in info else target
            if current is not None:
                deps[current] = []
        elif current is not None:
            deps[current].append(os.path.normpath(os.path.join(build_dir, line.strip())))
    return deps


def entry_args(entry):
    return entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])


def entry_output(entry):
    if "output" in entry:
        return entry["output"]
    args = entry_args(entry)
    for i, arg in enumerate(args):
        if arg == "-o" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("-o") and len(arg) > 2:
            return arg[2:]
    return None


def key_args(entry):
    """The compile command without its object path: what can change findings."""
    args, out, skip = entry_args(entry), [], False
    for arg in args:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif not arg.startswith("-o"):
            out.append(arg)
    return out


def expand_batches(database, root, build_dir):
    """Each source of a batch file (cmake/Unity.cmake) as an entry of its own.

    The entry keeps the batch's flags and object, so the object's recorded
    inputs (every source of the batch and their headers) decide freshness;
    the batch file on the command line becomes the source, so clang-tidy
    reads it alone, as a plain build would compile it.
    """
    out = []
    for entry in database:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if not (path.startswith(build_dir + os.sep) and ".unity" + os.sep in path):
            out.append(entry)
            continue
        with open(path, encoding="utf-8") as f:
            members = [m.group(1) for m in map(BATCH_MEMBER.match, f.read().splitlines()) if m]
        args = entry_args(entry)
        for member in members:
            source = os.path.join(root, member)
            out.append({"directory": entry["directory"], "file": source,
                        "arguments": [source if os.path.normpath(os.path.join(
                            entry["directory"], a)) == path else a for a in args]})
    return out


def first_party(path, root, build_dir):
    rel = os.path.relpath(path, root)
    return (rel.split(os.sep, 1)[0] in FIRST_PARTY and not rel.startswith("..")
            and not path.startswith(build_dir + os.sep) and not path.endswith(".pb.cc")
            and path.endswith((".cc", ".cpp", ".cxx")))


def main(argv):
    args = parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build_dir = os.path.realpath(args.build_dir or os.path.join(root, "build", "dev"))
    db_path = os.path.join(build_dir, "compile_commands.json")
    if not os.path.isfile(db_path):
        print(f"tidy: no {db_path}: configure and build first (cmake --preset dev)",
              file=sys.stderr)
        return 2
    # clang-tidy takes each TU's configuration from the nearest .clang-tidy
    # (test/ and bench/ narrow the root one); every one of them is in the key.
    configs = sorted([os.path.join(root, ".clang-tidy")] + [
        os.path.join(root, d, ".clang-tidy") for d in FIRST_PARTY
        if os.path.isfile(os.path.join(root, d, ".clang-tidy"))])
    cache_dir = os.environ.get("CAPTF_TIDY_CACHE",
                               os.path.join(os.path.expanduser("~"), ".cache", "captf-tidy"))
    started = time.monotonic()

    with open(db_path, encoding="utf-8") as f:
        database = expand_batches(json.load(f), root, build_dir)
    entries = []
    for entry in database:
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        if first_party(path, root, build_dir):
            entries.append((path, entry))
    deps = ninja_deps(build_dir)
    if args.analyzer:
        entries = [(path, entry) for path, entry in entries
                   if os.path.relpath(path, root).split(os.sep, 1)[0] in PRODUCT]

    if args.only:
        wanted = {os.path.realpath(p) for p in args.only}
        selected = []
        for path, entry in entries:
            output = entry_output(entry)
            files = set(deps.get(output, [])) | {path}
            if path in wanted or wanted & files:
                selected.append((path, entry))
        matched = {p for p in wanted for path, entry in selected
                   if p == path or p in deps.get(entry_output(entry), [])}
        if wanted - matched:
            print(f"tidy: no first-party TU is or includes {' '.join(sorted(wanted - matched))}",
                  file=sys.stderr)
            return 2
        entries = selected

    header_filter = f"^{ere_escape(root)}/({'|'.join(FIRST_PARTY)})/.*\\.h$"
    tidy_args = [
        CLANG_TIDY, "--quiet", "--warnings-as-errors=*",
        f"--header-filter={header_filter}",
        # The compiler's own warnings are GCC's job (-Werror in the dev build);
        # clang's reading of the same -W flags would be a second, different set.
        "--extra-arg=-Wno-error", "--extra-arg=-Wno-unknown-warning-option",
        "--extra-arg=-fno-sanitize=all",
    ] + ([] if args.analyzer else ["--checks=-clang-analyzer-*"]) + args.tidy_arg

    # Keys name the checkout and the build tree by placeholder, so a second
    # clone of the same commit (another CI checkout) hits the same cache.
    def portable(text):
        return text.replace(build_dir, "<build>").replace(root, "<root>")

    hasher = Hasher()
    version = subprocess.run([CLANG_TIDY, "--version"], check=True, capture_output=True,
                             text=True).stdout
    common = hashlib.sha256()
    for part in [KEY_VERSION, version, portable(json.dumps(tidy_args))] + [
            portable(c) + ":" + hasher.file(c) for c in configs]:
        common.update(part.encode() + b"\0")

    # One job per distinct key: a source compiled into two targets with the
    # same flags (test/fuzz_replay_main.cc) is checked once.
    jobs, seen, cached = [], set(), 0
    for path, entry in entries:
        output = entry_output(entry)
        files = deps.get(output) if output else None
        key = None
        obj = os.path.join(build_dir, output) if output else None
        if files and obj and os.path.exists(obj):
            obj_mtime = os.stat(obj).st_mtime
            fresh = all(os.path.exists(p) and os.stat(p).st_mtime <= obj_mtime
                        for p in [path] + files)
            if fresh:
                h = common.copy()
                h.update(portable(json.dumps([entry["directory"], key_args(entry)])).encode()
                         + b"\0")
                for p in [path] + files:
                    h.update(portable(p).encode() + b"\0" + hasher.file(p).encode() + b"\0")
                key = h.hexdigest()
        if key is not None and key in seen:
            cached += 1
            continue
        if key is not None:
            seen.add(key)
            stamp = os.path.join(cache_dir, key[:2], key)
            if not args.no_cache and os.path.exists(stamp):
                os.utime(stamp)
                cached += 1
                continue
        jobs.append((path, entry, key))

    if args.list:
        for path, _, key in jobs:
            print(f"{os.path.relpath(path, root)}{'' if key else ' (not built since changed)'}")
        print(f"tidy: {len(entries)} first-party TUs, {cached} cached, {len(jobs)} to check "
              f"({time.monotonic() - started:.1f}s)")
        return 0

    # The biggest TUs first, so the last job to finish is a short one.
    jobs.sort(key=lambda job: -os.path.getsize(job[0]))
    lock = threading.RLock()
    findings = {}
    failed, done = [], 0
    took = {}
    step = 20 if len(jobs) > 40 else 5
    print(f"tidy: {len(entries)} first-party TUs, {cached} cached, {len(jobs)} to check "
          f"with {args.jobs} jobs", flush=True)

    running = set()

    def stop(signum, _frame):
        # The clang-tidy processes go with us, not on without a parent.
        with lock:
            for proc in running:
                proc.kill()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    # --fix: each TU exports its fixes here; clang-apply-replacements merges
    # them at the end (a header fixed from two TUs is edited once).
    fixes_dir = tempfile.mkdtemp(prefix="captf-tidy-fixes-") if args.fix else None

    def check(job):
        path, entry, key = job
        began = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="captf-tidy-") as tmp:
            with open(os.path.join(tmp, "compile_commands.json"), "w", encoding="utf-8") as f:
                json.dump([entry], f)
            with lock:
                name = hashlib.sha256(path.encode()).hexdigest()[:16]
                extra = ([f"--export-fixes={os.path.join(fixes_dir, name)}.yaml"]
                         if fixes_dir else [])
                proc = subprocess.Popen(tidy_args + extra + ["-p", tmp, path],
                                        stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True,
                                        cwd=entry["directory"])
                running.add(proc)
            out, _ = proc.communicate()
            with lock:
                running.discard(proc)
        text = "\n".join(line for line in out.splitlines() if not NOISE.match(line))
        return path, key, proc.returncode, text, time.monotonic() - began

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for future in as_completed([pool.submit(check, job) for job in jobs]):
            path, key, rc, text, seconds = future.result()
            with lock:
                done += 1
                took[path] = seconds
                if rc == 0:
                    if key is not None:
                        stamp = os.path.join(cache_dir, key[:2], key)
                        os.makedirs(os.path.dirname(stamp), exist_ok=True)
                        open(stamp, "w", encoding="utf-8").close()
                else:
                    failed.append(path)
                    print(f"-- {os.path.relpath(path, root)}: clang-tidy failed\n{text}",
                          flush=True)
                    lines = text.splitlines()
                    for i, line in enumerate(lines):
                        m = FINDING.match(line)
                        if not m:
                            continue
                        # A message that spans lines (the analyzer's) ends
                        # with its check name further down.
                        check_name = m.group(6)
                        for later in lines[i + 1:] if check_name is None else []:
                            tail = re.search(r"\[([a-z][\w.,*-]+)\]$", later)
                            if tail or FINDING.match(later):
                                check_name = tail.group(1) if tail else None
                                break
                        check_name = (check_name or m.group(4)).split(",")[0]
                        findings[(m.group(1), int(m.group(2)), int(m.group(3)), check_name)] = True
                if done % step == 0 or done == len(jobs):
                    print(f"tidy: {done}/{len(jobs)} checked, {len(failed)} failed, "
                          f"{time.monotonic() - started:.0f}s", flush=True)

    if fixes_dir:
        apply = os.path.join(os.path.dirname(CLANG_TIDY), "clang-apply-replacements")
        # Two checks adding an #include at the same place would stop the
        # whole merge; the second include is then left for the next run.
        subprocess.run([apply if os.path.exists(apply) else "clang-apply-replacements",
                        "--ignore-insert-conflict", fixes_dir], check=True)
        print(f"tidy: applied the offered fixes ({len(os.listdir(fixes_dir))} TUs with fixes); "
              "rebuild and run again for what is left", flush=True)
        for name in os.listdir(fixes_dir):
            os.remove(os.path.join(fixes_dir, name))
        os.rmdir(fixes_dir)

    if os.path.isdir(cache_dir):
        now = time.time()
        for sub in os.listdir(cache_dir):
            subdir = os.path.join(cache_dir, sub)
            for name in os.listdir(subdir) if os.path.isdir(subdir) else []:
                stamp = os.path.join(subdir, name)
                if now - os.stat(stamp).st_mtime > CACHE_MAX_AGE_S:
                    os.remove(stamp)

    elapsed = time.monotonic() - started
    if failed:
        by_check = {}
        for (_, _, _, check_name) in findings:
            by_check[check_name] = by_check.get(check_name, 0) + 1
        print(f"tidy: {len(findings)} distinct findings:")
        for check_name, count in sorted(by_check.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {count:5d} {check_name}")
        print("tidy: failed TUs:")
        for path in sorted(failed):
            print(f"  {os.path.relpath(path, root)}")
    if took:
        slowest = sorted(took.items(), key=lambda kv: -kv[1])[:5]
        print("tidy: slowest: " + ", ".join(f"{os.path.relpath(p, root)} {s:.0f}s"
                                             for p, s in slowest))
    if args.times:
        with open(args.times, "w", encoding="utf-8") as f:
            for p, s in sorted(took.items(), key=lambda kv: -kv[1]):
                f.write(f"{s:.1f}\t{os.path.relpath(p, root)}\n")
    print(f"tidy: checked {len(jobs)}, cached {cached}, failed {len(failed)} "
          f"({elapsed:.0f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
