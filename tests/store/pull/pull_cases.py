#!/usr/bin/env python3
"""pull_cases: `anvil pull` against the local registry (tests/pylib/registry_server.py).

  pull_cases.py ANVIL GGUF CASE      CASE: basic resume corrupt errors hf names

basic    pull succeeds through the /cdn/ redirect in several Range parts, the blob is
         byte-identical to the source, the manifest is the registry's bytes, nothing partial is
         left, `anvil list` shows it, `anvil run NAME` generates, a second pull fetches no blob
resume   (a) the registry cuts every response that reaches one offset: the pull fails, the
         next pull fetches exactly the missing bytes; (b) the network dies after 55% of the
         blob: the next pull re-fetches no finished byte; (c) a dropped connection inside one
         pull resumes at the drop; (e) a stalled part is retried from where it stopped;
         (d) the pull is killed (SIGKILL): total served < 1.3x size
corrupt  a corrupted blob is rejected naming its digest; no manifest, no blob, no partial left
errors   404 (one line naming the model), 500 (retried, then a clear error), a 500 on a
         blob part that goes away (retried, succeeds), a 404 blob, a registry that ignores
         Range, a refused connection
hf       hf.co/<user>/<repo>:<quant> through ANVIL_HF_ENDPOINT
concurrent three pulls of one name and one of another name with the same layers (tiny2) at
         once (a throttled registry): all succeed, the later ones wait for the first and find
         its layers (before: "layer ... is being pulled by another process"); the registry
         served each blob once; `anvil rm` of another model meanwhile is not held up by the
         running download
names    names with '..' and other escapes are rejected before any request
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pullenv import Env, one_line_error, overlap  # noqa: E402

NAME = "library/tiny:latest"


def model_layer(env, ns="library", model="tiny", tag="latest"):
    return [l for l in env.layers(ns, model, tag) if l["mediaType"] == "application/vnd.ollama.image.model"][0]


def remove_blob(env, digest):
    """Deletes a pulled blob so the next pull fetches it again (the manifest may stay)."""
    if os.path.exists(env.blob_path(digest)):
        os.unlink(env.blob_path(digest))


def blob_ranges(stats, digest):
    return [tuple(r) for r in stats["blobs"].get(digest, {}).get("ranges", [])]


def served(stats, digest):
    return stats["blobs"].get(digest, {}).get("bytes", 0)


def check_failed_one_line(env, rc, err, what, must_contain):
    lines = one_line_error(err)
    print("     %s -> %s" % (what, err.strip()))
    env.check(rc != 0, what + ": exit status != 0", rc)
    env.check(len(lines) == 1 and lines[0].startswith("anvil: "), what + ": one 'anvil: ' error line", err)
    for s in must_contain:
        env.check(s in err, "%s: error mentions %r" % (what, s), err.strip())


def case_basic(env, gguf):
    name = env.host + "/" + NAME
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    env.check(rc == 0, "pull exits 0", err)
    for status in ("pulling manifest", "verifying sha256 digest", "writing manifest", "success"):
        env.check(status in out, "status line %r printed" % status, out)
    ml = model_layer(env)
    env.check("pulling %s: 100%%" % ml["digest"][7:19] in out, "per-layer progress reaches 100%", out)
    with open(gguf, "rb") as f:
        src = f.read()
    blob = env.blob_path(ml["digest"])
    env.check(os.path.exists(blob) and open(blob, "rb").read() == src, "model blob byte-identical to the GGUF")
    for l in env.layers("library", "tiny", "latest"):
        env.check(os.path.exists(env.blob_path(l["digest"])), "layer %s present" % l["digest"][:19])
    mpath = env.manifest_path(env.host, "library", "tiny", "latest")
    env.check(os.path.exists(mpath) and open(mpath, "rb").read() == env.manifest("library", "tiny", "latest"),
              "manifest written with the registry's exact bytes")
    leftovers = [f for f in env.store_files() if "partial" in f or f.endswith(".tmp")]
    env.check(not leftovers, "no partial or state files left", leftovers)
    st = env.stats()
    ranges = blob_ranges(st, ml["digest"])
    env.check(len(ranges) == 7, "model blob fetched in 7 Range parts (ANVIL_PULL_PART_SIZE=131072)", ranges)
    env.check(served(st, ml["digest"]) == ml["size"], "model blob served exactly once",
              (served(st, ml["digest"]), ml["size"]))
    env.check(st["requests"].get("/cdn/" + ml["digest"], 0) == 7, "blob requests followed the /cdn/ redirect",
              st["requests"])

    rc, out, err = env.anvil_run("list")
    env.check(rc == 0 and (env.host + "/library/tiny:latest") in out, "`anvil list` shows the pulled model",
              out + err)
    rc, out, err = env.anvil_run("run", name, "-n", "4", "--temp", "0", "Hello")
    env.check(rc == 0 and out.strip() != "", "`anvil run NAME -n 4 --temp 0` generates", (rc, out, err))

    # Again, plain http from the environment instead of --insecure: every blob is present.
    env.control(reset_stats=True)
    rc, out, err = env.anvil_run("pull", name, env={"ANVIL_REGISTRY_INSECURE": "1"})
    st = env.stats()
    env.check(rc == 0 and "success" in out, "second pull (ANVIL_REGISTRY_INSECURE=1) succeeds", err)
    env.check(not st["blobs"], "second pull fetches no blob", st["blobs"])
    env.check(st["requests"] == {"/v2/library/tiny/manifests/latest": 1}, "second pull: one manifest request",
              st["requests"])


def part_bounds(size, part=131072):
    return [(o, min(o + part, size)) for o in range(0, size, part)]


def state_completed(env, digest):
    """Sum of 'completed' over the <blob>-partial-N state files (0 if none)."""
    d = os.path.join(env.store, "blobs")
    base = os.path.basename(env.blob_path(digest)) + "-partial-"
    total = 0
    if not os.path.isdir(d):
        return 0
    for f in os.listdir(d):
        if f.startswith(base) and f[len(base):].isdigit():
            try:
                total += json.load(open(os.path.join(d, f)))["completed"]
            except (ValueError, OSError, KeyError):
                pass
    return total


def check_resume(env, tag, name, digest, size, src, st1):
    """After a failed pull (registry stats st1): the next pull succeeds and fetches only what
    the first one had not saved; the only bytes served twice are ones that were in flight."""
    saved = state_completed(env, digest)
    served1 = served(st1, digest)
    env.check(0 < saved <= served1, "%s the part files record the bytes received" % tag, (saved, served1))
    env.control(clear=True, reset_stats=True)
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    st2 = env.stats()
    env.check(rc == 0 and open(env.blob_path(digest), "rb").read() == src,
              "%s resumed pull succeeds, blob byte-identical" % tag, err)
    served2 = served(st2, digest)
    print("     %s saved %d; served %d + %d = %d for a %d-byte blob (%.3fx)" %
          (tag, saved, served1, served2, served1 + served2, size, (served1 + served2) / size))
    env.check(served2 == size - saved, "%s the resumed pull fetched exactly the unsaved bytes" % tag,
              (served2, size - saved))
    again = overlap(blob_ranges(st1, digest), blob_ranges(st2, digest))
    env.check(again == served1 - saved, "%s only bytes lost in flight were fetched twice" % tag,
              (again, served1 - saved))
    env.check(served1 + served2 < 1.3 * size, "%s bytes served over both pulls < 1.3x blob size" % tag,
              (served1 + served2) / size)


def case_resume(env, gguf):
    name = env.host + "/" + NAME
    ml = model_layer(env)
    digest, size = ml["digest"], ml["size"]
    parts = part_bounds(size)
    with open(gguf, "rb") as f:
        src = f.read()

    # (a) every response that reaches offset X is cut there: part 4 can never finish
    cut = parts[4][0] + 50000
    env.control(drop={"digest": digest, "at": cut, "mode": "always"}, reset_stats=True)
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    st1 = env.stats()
    check_failed_one_line(env, rc, err, "(a) pull cut at one offset", [digest, "part 4", "retries"])
    env.check(not os.path.exists(env.manifest_path(env.host, "library", "tiny", "latest")),
              "(a) no manifest after the failed pull")
    env.check(os.path.exists(env.blob_path(digest) + "-partial"), "(a) the partial file is kept")
    check_resume(env, "(a)", name, digest, size, src, st1)
    env.check((cut, parts[4][1]) in blob_ranges(env.stats(), digest), "(a) part 4 resumed at the cut",
              blob_ranges(env.stats(), digest))

    # (b) the network dies after 55% of the blob (all parts are cut mid-way)
    remove_blob(env, digest)
    env.control(clear=True, reset_stats=True, budget={"digest": digest, "bytes": int(size * 0.55)})
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    st1 = env.stats()
    check_failed_one_line(env, rc, err, "(b) pull over a dying network", [digest])
    check_resume(env, "(b)", name, digest, size, src, st1)

    # (c) one dropped connection inside a pull: the retry continues at the drop
    remove_blob(env, digest)
    drop_at = parts[2][0] + 70000
    env.control(clear=True, reset_stats=True, drop={"digest": digest, "at": drop_at, "mode": "once"})
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    st = env.stats()
    env.check(rc == 0 and open(env.blob_path(digest), "rb").read() == src, "(c) pull with one drop succeeds", err)
    env.check((drop_at, parts[2][1]) in blob_ranges(st, digest), "(c) the retry asked from the drop offset",
              blob_ranges(st, digest))
    env.check(served(st, digest) == size, "(c) no byte served twice", served(st, digest))

    # (e) a stalled transfer (no byte for ANVIL_PULL_STALL_S) is retried from where it stopped
    remove_blob(env, digest)
    stall_at = parts[5][0] + 30000
    env.control(clear=True, reset_stats=True, drop={"digest": digest, "at": stall_at, "mode": "once", "stall": True})
    rc, out, err = env.anvil_run("pull", name, "--insecure", env={"ANVIL_PULL_STALL_S": "1"})
    st = env.stats()
    env.check(rc == 0 and open(env.blob_path(digest), "rb").read() == src, "(e) pull with a stalled part succeeds", err)
    env.check("part 5 stalled; retrying" in err, "(e) the stall is reported", err)
    env.check((stall_at, parts[5][1]) in blob_ranges(st, digest), "(e) the retry asked from the stall offset",
              blob_ranges(st, digest))

    # (d) killed mid-pull (SIGKILL, nothing saved at exit), then resumed
    remove_blob(env, digest)
    env.control(clear=True, reset_stats=True, rate=40000)  # ~280 KB/s over 7 parts
    p = env.start_anvil("pull", name, "--insecure")
    deadline = time.time() + 60
    while state_completed(env, digest) < 0.3 * size and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    saved = state_completed(env, digest)
    st1 = env.stats()
    env.check(0 < saved < size, "(d) killed with part of the blob saved", (saved, size))
    env.control(clear=True, reset_stats=True)
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    st2 = env.stats()
    env.check(rc == 0 and open(env.blob_path(digest), "rb").read() == src, "(d) pull after the kill succeeds", err)
    total = served(st1, digest) + served(st2, digest)
    print("     (d) saved %d at the kill; served %d + %d = %d (%.3fx)" %
          (saved, served(st1, digest), served(st2, digest), total, total / size))
    env.check(served(st2, digest) <= size - saved, "(d) the resumed pull fetched only unsaved bytes",
              (served(st2, digest), size - saved))
    env.check(total < 1.3 * size, "(d) bytes served over both pulls < 1.3x blob size", total / size)


def case_corrupt(env, gguf):
    name = env.host + "/" + NAME
    digest = model_layer(env)["digest"]
    env.control(corrupt=[digest])
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    check_failed_one_line(env, rc, err, "corrupted blob", ["digest mismatch for layer " + digest, "removed"])
    env.check(not os.path.exists(env.manifest_path(env.host, "library", "tiny", "latest")), "no manifest written")
    left = [f for f in env.store_files() if digest[7:] in f]
    env.check(not left, "nothing of the corrupted blob is left (blob, partial, state)", left)
    # every layer corrupted: all are rejected, none is left to be "resumed" by the next pull
    for l in env.layers("library", "tiny", "latest"):
        remove_blob(env, l["digest"])
    env.control(corrupt=["*"])
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    check_failed_one_line(env, rc, err, "every blob corrupted", ["digest mismatch for layer", "more layers, removed"])
    left = [f for f in env.store_files() if "partial" in f]
    env.check(not left, "no partial file of any layer is left", left)
    env.control(clear=True)
    rc, out, err = env.anvil_run("pull", name, "--insecure")
    env.check(rc == 0, "the same pull succeeds once the blobs are served intact", err)


def case_errors(env, gguf):
    ml = model_layer(env)
    # 404 on the manifest
    rc, out, err = env.anvil_run("pull", env.host + "/library/nothere:v1", "--insecure")
    check_failed_one_line(env, rc, err, "unknown model", ["model 'library/nothere:v1' not found in registry " + env.host])
    # 500 on the manifest, always: retried max_retries (6) times
    prefix = "/v2/library/tiny/manifests/"
    env.control(status=[{"prefix": prefix, "code": 500, "count": -1}], reset_stats=True)
    rc, out, err = env.anvil_run("pull", env.host + "/" + NAME, "--insecure")
    check_failed_one_line(env, rc, err, "manifest HTTP 500", ["HTTP 500", "library/tiny:latest", "retries"])
    n = env.stats()["requests"].get(prefix + "latest", 0)
    env.check(n == 7, "manifest requested 1 + 6 retries times", n)
    # 500 twice on one blob: the part retries and the pull succeeds
    env.control(clear=True, reset_stats=True,
                status=[{"prefix": "/cdn/" + ml["digest"], "code": 500, "count": 2}])
    rc, out, err = env.anvil_run("pull", env.host + "/" + NAME, "--insecure")
    st = env.stats()
    env.check(rc == 0, "transient blob 500s are retried and the pull succeeds", err)
    env.check(st["requests"].get("/cdn/" + ml["digest"], 0) == 9, "7 parts + 2 retried requests",
              st["requests"])
    env.check(served(st, ml["digest"]) == ml["size"], "blob served once in all", served(st, ml["digest"]))
    # 404 for a blob the manifest lists: no retry, the digest is named
    remove_blob(env, ml["digest"])
    env.control(clear=True, reset_stats=True,
                status=[{"prefix": "/cdn/" + ml["digest"], "code": 404, "count": -1}])
    rc, out, err = env.anvil_run("pull", env.host + "/" + NAME, "--insecure")
    check_failed_one_line(env, rc, err, "blob 404", [ml["digest"], "HTTP 404"])
    n = env.stats()["requests"].get("/cdn/" + ml["digest"], 0)
    env.check(n <= 7, "a 404 blob is not retried", n)
    env.control(clear=True)
    # a registry that ignores Range (200 + the whole blob for every part): still correct
    remove_blob(env, ml["digest"])
    env.control(clear=True, reset_stats=True, no_range=True)
    rc, out, err = env.anvil_run("pull", env.host + "/" + NAME, "--insecure")
    with open(gguf, "rb") as f:
        env.check(rc == 0 and open(env.blob_path(ml["digest"]), "rb").read() == f.read(),
                  "a registry without Range support: pull succeeds, blob identical", err)
    env.control(clear=True)
    # nothing listens on the port
    rc, out, err = env.anvil_run("pull", "127.0.0.1:1/library/tiny", "--insecure")
    check_failed_one_line(env, rc, err, "refused connection", ["connection failed", "library/tiny:latest"])


def case_hf(env, gguf):
    name = "hf.co/someuser/tiny-GGUF:Q8_0"
    rc, out, err = env.anvil_run("pull", name, env={"ANVIL_HF_ENDPOINT": "http://%s/" % env.host})
    env.check(rc == 0 and "success" in out, "hf.co pull through ANVIL_HF_ENDPOINT succeeds", err)
    mpath = env.manifest_path("hf.co", "someuser", "tiny-GGUF", "Q8_0")
    env.check(os.path.exists(mpath), "manifest stored under hf.co/someuser/tiny-GGUF/Q8_0", env.store_files())
    ml = model_layer(env, "someuser", "tiny-GGUF", "Q8_0")
    with open(gguf, "rb") as f:
        env.check(open(env.blob_path(ml["digest"]), "rb").read() == f.read(), "hf.co blob byte-identical")
    rc, out, err = env.anvil_run("list")
    env.check(rc == 0 and name in out, "`anvil list` shows " + name, out + err)
    rc, out, err = env.anvil_run("pull", "hf.co/someuser/missing", env={"ANVIL_HF_ENDPOINT": "http://" + env.host})
    check_failed_one_line(env, rc, err, "missing hf.co repository", ["someuser/missing:latest", "not found"])


def case_names(env, gguf):
    bad = [env.host + "/../etc/passwd", env.host + "/library/../x", env.host + "/library/tiny:..",
           "../../tiny", "/etc/passwd", "hf.co/../x", "library/ti\\ny", env.host + "/a/b/c/d"]
    for name in bad:
        rc, out, err = env.anvil_run("pull", name, "--insecure")
        check_failed_one_line(env, rc, err, "name %r" % name, [])
    st = env.stats()
    env.check(not st["requests"], "no request reached the registry", st["requests"])
    env.check(not os.path.exists(env.store) or not env.store_files(), "nothing written to the store",
              env.store_files() if os.path.exists(env.store) else "")


def case_concurrent(env, gguf):
    name = env.host + "/" + NAME
    size = os.path.getsize(gguf)
    env.control(rate=max(size // 2, 1))  # the first pull takes ~2 s: the others start meanwhile
    # a model of its own (no layer shared with the pulls)
    other = os.path.join(os.path.dirname(env.store), "bystander.gguf")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                                 "tools", "make_test_model.py"), "--family", "gemma3", "--preset",
                    "tiny", "--type", "q8_0", "--out", other], check=True, capture_output=True)
    gguf_other = other
    mf = os.path.join(os.path.dirname(env.store), "Modelfile.bystander")
    with open(mf, "w") as f:
        f.write("FROM %s\nSYSTEM bystander\n" % gguf_other)
    rc, out, err = env.anvil_run("create", "bystander", "-f", mf)
    env.check(rc == 0, "create a bystander model", err.strip())
    procs = [env.start_anvil("pull", name, "--insecure") for _ in range(3)]
    procs.append(env.start_anvil("pull", env.host + "/library/tiny2:latest", "--insecure"))
    time.sleep(0.5)
    t_rm = time.time()
    rc, out, err = env.anvil_run("rm", "bystander")
    env.check(rc == 0, "anvil rm bystander during the pulls", err.strip())
    rm_s = time.time() - t_rm
    env.check(rm_s < 1.5, "anvil rm during the pulls answers at once (%.2fs, not after the download)" % rm_s,
              err.strip())
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    env.control(rate=0)
    for i, (out, err, rc) in enumerate(results):
        env.check(rc == 0, "concurrent pull %d exits 0" % i, err.strip())
    st = env.stats()
    for l in env.layers("library", "tiny", "latest"):
        got = served(st, l["digest"])
        env.check(got == l["size"], "layer %s served once (%d bytes of %d)" % (l["digest"][:19], got, l["size"]),
                  got)
        env.check(os.path.exists(env.blob_path(l["digest"])), "layer %s present" % l["digest"][:19])
    rc, out, err = env.anvil_run("show", name)
    env.check(rc == 0, "the model is complete (anvil show)", err)
    rc, out, err = env.anvil_run("show", env.host + "/library/tiny2:latest")
    env.check(rc == 0, "tiny2, sharing its layers, is complete too (anvil show)", err)
    leftovers = [f for f in env.store_files() if "partial" in f or ".anvil-tmp" in f]
    env.check(not leftovers, "no partial or temporary files left", leftovers)


CASES = {"basic": case_basic, "resume": case_resume, "corrupt": case_corrupt, "errors": case_errors,
         "hf": case_hf, "names": case_names, "concurrent": case_concurrent}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        sys.exit(__doc__)
    anvil, gguf, case = sys.argv[1:]
    env = Env(anvil, {NAME: gguf, "library/tiny2:latest": gguf, "someuser/tiny-GGUF:Q8_0": gguf})
    try:
        CASES[case](env, gguf)
    finally:
        code = env.finish()
    return code


if __name__ == "__main__":
    sys.exit(main())
