#!/usr/bin/env python3
"""A hostile user's afternoon with cibench, counted.

Runs several hundred bad inputs against a cibench binary: model files of every container
(llama2.c .bin, GGUF, Hugging Face safetensors folders, BERT folders, .cbq) truncated, corrupted
and made inconsistent; tokenizers and vocabularies; scenario files and every scenario key given
wrong values; the results store killed mid-run, opened by many processes at once, read-only,
damaged and foreign; every command with bad run ids and paths. Each case is judged:

  clear error   non-zero exit (not a signal), within the time limit, stderr naming what it must
                (the file, the key, the value)
  unclear error non-zero exit whose message does not name it
  accepted      exit 0 where a well-formed input may be accepted (e.g. a flipped bit inside the
                weights is a different, valid model)
  crash         killed by a signal, a sanitizer report, an uncaught exception
  hang          still running at the time limit
  silent wrong  exit 0 where the input is inconsistent and must be refused
  data lost     a stored run changed or vanished, or the store fails its integrity check

Usage: scripts/hostile-run.py [--cibench build/release/bin/cibench] [--shared ../shared]
                              [--only CATEGORY] [--verbose]
Prints one line per case that is not a clear error or an allowed acceptance, and the count table
by category. Exit 1 when anything crashed, hung, was silently wrong or lost data.
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTCOMES = ["clear error", "unclear error", "accepted", "crash", "hang", "silent wrong", "data lost"]
BAD = {"crash", "hang", "silent wrong", "data lost"}


class Run:
    def __init__(self, args):
        self.cibench = str(Path(args.cibench).resolve())
        self.shared = Path(args.shared).resolve()
        self.tmp = Path(tempfile.mkdtemp(prefix="cibench_hostile_"))
        self.verbose = args.verbose
        self.only = args.only
        self.results = []  # (category, name, outcome, detail)
        self.canary = self.tmp / "canary.sqlite"
        self.canary_state = None

    # ---- running a case -------------------------------------------------------------------
    def exec(self, argv, timeout=30, env=None, cwd=None, user=None):
        e = dict(os.environ)
        e.pop("CIBENCH_MEMORY_AVAILABLE_BYTES", None)
        if env:
            e.update(env)
        if user is not None:
            argv = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + argv
        t0 = time.time()
        try:
            p = subprocess.run(argv, capture_output=True, timeout=timeout, env=e, cwd=cwd)
            return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), time.time() - t0
        except subprocess.TimeoutExpired as x:
            return None, (x.stdout or b"").decode(errors="replace"), (x.stderr or b"").decode(errors="replace"), timeout

    def case(self, category, name, argv, expect="error", must=None, timeout=30, env=None, check=None,
             user=None, store=None):
        """expect: 'error' (must be refused, naming every string in `must`), 'ok' (must succeed),
        'either' (accepted or a clear error). `check(rc, out, err)` may return an outcome to
        override. `store`: a store whose stored runs must be unchanged afterwards."""
        if self.only and self.only != category:
            return
        before = store_state(store) if store else None
        rc, out, err, secs = self.exec([self.cibench] + argv, timeout=timeout, env=env, user=user)
        must = [must] if isinstance(must, str) else (must or [])
        named = all(m in err or m in out for m in must)
        sanitizer = any(s in err for s in ("AddressSanitizer", "runtime error:", "LeakSanitizer",
                                             "terminate called", "std::bad_alloc", "Aborted"))
        if rc is None:
            outcome = "hang"
        elif rc < 0 or rc >= 128 or sanitizer:
            outcome = "crash"
        elif rc != 0:
            # cibench says "cibench: error: ..."; a bad option is answered by the option parser,
            # which names the option
            outcome = "clear error" if (err.strip() and named) else "unclear error"
            if expect == "ok":
                outcome = "unclear error" if not named else outcome
        else:
            outcome = "silent wrong" if expect == "error" else "accepted"
        if check and outcome not in ("hang", "crash"):
            outcome = check(rc, out, err) or outcome
        if store and outcome not in ("hang",):
            after = store_state(store)
            if after is None or before is None or not states_keep(before, after):
                outcome = "data lost"
        detail = "rc=%s %.1fs: %s" % (rc, secs, (err.strip().splitlines() or [""])[-1][:240])
        self.results.append((category, name, outcome, detail))
        if self.verbose or outcome not in ("clear error", "accepted"):
            print("%-13s %-10s %-44s %s" % (outcome, category, name[:44], detail), flush=True)
        return outcome

    def record(self, category, name, outcome, detail=""):
        self.results.append((category, name, outcome, detail))
        if self.verbose or outcome not in ("clear error", "accepted"):
            print("%-13s %-10s %-44s %s" % (outcome, category, name[:44], detail), flush=True)

    def table(self):
        cats = []
        for c, _, _, _ in self.results:
            if c not in cats:
                cats.append(c)
        head = "| category | cases | " + " | ".join(OUTCOMES) + " |"
        lines = [head, "|" + "---|" * (len(OUTCOMES) + 2)]
        total = {o: 0 for o in OUTCOMES}
        for c in cats:
            rows = [r for r in self.results if r[0] == c]
            counts = {o: sum(1 for r in rows if r[2] == o) for o in OUTCOMES}
            for o in OUTCOMES:
                total[o] += counts[o]
            lines.append("| %s | %d | " % (c, len(rows)) + " | ".join(str(counts[o]) for o in OUTCOMES) + " |")
        lines.append("| **all** | **%d** | " % len(self.results) + " | ".join("**%d**" % total[o] for o in OUTCOMES) + " |")
        return "\n".join(lines), total


# ---- the store's contents, to prove nothing stored was lost --------------------------------
def store_state(path):
    con = None
    try:
        con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=30)
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        runs = con.execute("SELECT run_id, status, scenario_name FROM runs ORDER BY run_id").fetchall()
        h = hashlib.sha256()
        for table in ("variants", "requests"):
            for row in con.execute("SELECT * FROM %s ORDER BY rowid" % table):
                h.update(repr(row).encode())
        return {"ok": ok, "runs": runs, "hash": h.hexdigest()}
    except sqlite3.Error as e:
        return {"ok": "unreadable: %s" % e, "runs": [], "hash": ""}
    finally:
        if con is not None:
            con.close()


def states_keep(before, after):
    """Every run stored before is still there with the same status (complete runs) and rows;
    new runs may have been added."""
    if after["ok"] != "ok":
        return False
    b = {r[0]: r for r in before["runs"]}
    a = {r[0]: r for r in after["runs"]}
    for rid, row in b.items():
        if rid not in a:
            return False
        if row[1] == "complete" and a[rid] != row:
            return False
    if [r for r in after["runs"] if r[0] in b] == before["runs"] and len(a) == len(b):
        return after["hash"] == before["hash"]
    return True


# ---- file helpers ---------------------------------------------------------------------------
def write(path, data):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return str(path)


def patched(data, at, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, at, value)
    return bytes(b)


def flips(data, seed, n, lo, hi):
    b = bytearray(data)
    x = seed
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        pos = lo + (x >> 20) % max(1, hi - lo)
        b[pos] ^= 1 << ((x >> 8) % 8)
    return bytes(b)


def truncations(size, header):
    pts = sorted({0, 1, 4, 7, 8, 16, 27, header // 2, header - 1, header, header + 1, size // 2, size - 4, size - 1})
    return [p for p in pts if 0 <= p < size]


def safetensors_parts(data):
    n = struct.unpack_from("<Q", data, 0)[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def safetensors_bytes(header, payload):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + payload


# ---- the cases ------------------------------------------------------------------------------
def llama_cases(r):
    s = r.shared / "models/stories260K"
    tok = str(s / "tok512.bin")

    def gen(model, name, expect, must, folder=False):
        def check(rc, out, err):
            if rc == 0:  # what is accepted must have generated the tokens asked for
                try:
                    if len(json.loads(out.strip().splitlines()[-1])["token_ids"]) != 13:  # BOS + 12
                        return "silent wrong"
                except (ValueError, KeyError, IndexError):
                    return "unclear error"
            return None
        r.case("model", name, ["generate", "-m", model, "-z", tok, "-n", "12", "--json"], expect, must, check=check)

    # llama2.c .bin: truncations, every header field made absurd, flips in the weights
    data = (s / "stories260K.bin").read_bytes()
    for t in truncations(len(data), 28):
        p = write(r.tmp / "bin" / ("trunc%d.bin" % t), data[:t])
        gen(p, "bin truncated at %d" % t, "error", p)
    fields = ["dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"]
    for i, f in enumerate(fields):
        for v in (0, -1, 1, 3, 2**31 - 1, -2**31):
            orig = struct.unpack_from("<i", data, 4 * i)[0]
            if v == orig:
                continue
            p = write(r.tmp / "bin" / ("%s_%d.bin" % (f, v)), patched(data, 4 * i, "<i", v))
            # a seq_len of 3 and a negated vocab (llama2.c's "unshared classifier") are well formed
            # only if the file size says so; anything else must be refused naming the file
            expect = "either" if f == "seq_len" and v > 0 else "error"
            gen(p, "bin %s=%d" % (f, v), expect, p)
    for k in range(12):
        p = write(r.tmp / "bin" / ("flip%d.bin" % k), flips(data, k + 1, 4, 28, len(data)))
        gen(p, "bin weight bits flipped #%d" % k, "either", p)
    nan = bytearray(data)
    struct.pack_into("<f", nan, 28 + 4 * 100, float("nan"))
    p = write(r.tmp / "bin" / "nan.bin", bytes(nan))
    gen(p, "bin NaN weight", "error", [p, "non-finite"])
    inf = bytearray(data)
    struct.pack_into("<f", inf, 28 + 4 * 5000, float("inf"))
    p = write(r.tmp / "bin" / "inf.bin", bytes(inf))
    gen(p, "bin +inf weight", "error", [p, "non-finite"])
    p = write(r.tmp / "bin" / "extra.bin", data + b"\0" * 4096)
    gen(p, "bin trailing bytes", "either", p)

    # GGUF: truncations, header counts, flips in the metadata and tensor directory
    g = (s / "gguf/stories260K.gguf").read_bytes()
    for t in truncations(len(g), 4096):
        p = write(r.tmp / "gguf" / ("trunc%d.gguf" % t), g[:t])
        gen(p, "gguf truncated at %d" % t, "error", p)
    for at, fmt, vals, what in ((4, "<I", (0, 1, 2, 4, 0xFFFFFFFF), "version"),
                                (8, "<Q", (0, 1, 1000, 2**40, 2**64 - 1), "tensor count"),
                                (16, "<Q", (0, 1, 1000, 2**40, 2**64 - 1), "metadata count")):
        for v in vals:
            if struct.unpack_from(fmt, g, at)[0] == v:
                continue
            p = write(r.tmp / "gguf" / ("%s_%d.gguf" % (what.replace(" ", "_"), v)), patched(g, at, fmt, v))
            gen(p, "gguf %s=%d" % (what, v), "either" if (what, v) == ("version", 2) else "error", p)  # v2: same layout
    for k in range(40):
        p = write(r.tmp / "gguf" / ("flip%d.gguf" % k), flips(g, 100 + k, 2, 24, min(len(g), 6000)))
        gen(p, "gguf header bits flipped #%d" % k, "either", p)

    # Hugging Face folder: truncated safetensors, config made inconsistent, tensors overlapping,
    # missing, extra, non-finite
    hf = s / "hf"
    st = (hf / "model.safetensors").read_bytes()
    cfg = json.loads((hf / "config.json").read_text())
    header, payload = safetensors_parts(st)

    def hf_folder(name, cfg_=None, st_=None):
        d = r.tmp / "hf" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(cfg_ if cfg_ is not None else cfg))
        (d / "model.safetensors").write_bytes(st_ if st_ is not None else st)
        return str(d)

    for t in truncations(len(st), 8 + struct.unpack_from("<Q", st, 0)[0]):
        gen(hf_folder("trunc%d" % t, st_=st[:t]), "safetensors truncated at %d" % t, "error", "model.safetensors")
    for key, vals in (("num_hidden_layers", (0, 4, 6, -1, 1000000)), ("hidden_size", (0, 32, 128, -64)),
                      ("num_attention_heads", (0, 3, 7, 64)), ("num_key_value_heads", (0, 3, 8, 5)),
                      ("vocab_size", (0, 511, 513, 100000)), ("intermediate_size", (0, 171, 173)),
                      ("max_position_embeddings", (0, -5)), ("rms_norm_eps", (-1.0, "x")),
                      ("rope_theta", (0.0, -1.0)), ("hidden_act", ("gelu", 7)),
                      ("model_type", ("mistral", None)), ("tie_word_embeddings", ("yes",))):
        for v in vals:
            c = dict(cfg)
            if v is None:
                c.pop(key, None)
            else:
                c[key] = v
            d = hf_folder("cfg_%s_%s" % (key, v), cfg_=c)
            # another Llama-architecture model_type, or none beside "architectures", may load
            gen(d, "config.json %s=%s" % (key, v), "either" if key == "model_type" else "error", d)
    for text, name in ((b"", "empty"), (b"{", "unterminated"), (b"[]", "an array"), (b"\xff\xfe\x00", "binary"),
                       (b'{"model_type": "llama"}', "only model_type")):
        d = hf_folder("cfgtext_" + name)
        Path(d, "config.json").write_bytes(text)
        gen(d, "config.json %s" % name, "error", "config.json")
    names = sorted(k for k in header if k != "__metadata__")
    # overlapping byte ranges, a missing tensor, an extra tensor, a wrong dtype, a wrong shape
    h = json.loads(json.dumps(header))
    h[names[1]]["data_offsets"] = list(h[names[0]]["data_offsets"]) if h[names[0]]["data_offsets"][1] - h[names[0]]["data_offsets"][0] == h[names[1]]["data_offsets"][1] - h[names[1]]["data_offsets"][0] else [0, h[names[1]]["data_offsets"][1] - h[names[1]]["data_offsets"][0]]
    gen(hf_folder("overlap", st_=safetensors_bytes(h, payload)), "safetensors overlapping tensors", "error", ["model.safetensors", "overlap"])
    for victim in names[:6]:
        h = json.loads(json.dumps(header))
        del h[victim]
        gen(hf_folder("missing_" + victim, st_=safetensors_bytes(h, payload)), "safetensors without %s" % victim, "error", victim)
    h = json.loads(json.dumps(header))
    h["model.layers.5.mlp.up_proj.weight"] = dict(h[names[0]])
    h["model.layers.5.mlp.up_proj.weight"]["data_offsets"] = [len(payload), len(payload) + (h[names[0]]["data_offsets"][1] - h[names[0]]["data_offsets"][0])]
    extra = payload + payload[h[names[0]]["data_offsets"][0]:h[names[0]]["data_offsets"][1]]
    gen(hf_folder("extra_layer", st_=safetensors_bytes(h, extra)), "safetensors with a 6th layer the config lacks", "error", "model.layers.5")
    for victim in names[:4]:
        h = json.loads(json.dumps(header))
        h[victim]["dtype"] = "I64"
        gen(hf_folder("dtype_" + victim, st_=safetensors_bytes(h, payload)), "safetensors %s as I64" % victim, "error", victim)
        h = json.loads(json.dumps(header))
        h[victim]["shape"] = list(reversed(h[victim]["shape"])) + [1]
        gen(hf_folder("shape_" + victim, st_=safetensors_bytes(h, payload)), "safetensors %s reshaped" % victim, "error", victim)
    for k in range(30):
        hlen = struct.unpack_from("<Q", st, 0)[0]
        gen(hf_folder("flip%d" % k, st_=flips(st, 300 + k, 2, 8, 8 + hlen)), "safetensors header bits flipped #%d" % k, "either", "model.safetensors")
    # HF config with fewer layers than the weights: the prefix must not run silently
    c = dict(cfg)
    c["num_hidden_layers"] = cfg["num_hidden_layers"] - 1
    gen(hf_folder("fewer_layers", cfg_=c), "config names fewer layers than the weights", "error", "does not account for")

    # .cbq: truncations, header edits, an aliased offset, a payload byte flipped
    cbq = r.tmp / "cbq" / "m.cbq"
    cbq.parent.mkdir(parents=True, exist_ok=True)
    q = r.exec([r.cibench, "quantize", "-m", str(s / "stories260K.bin"), "-f", "int4_g32", "-o", str(cbq)], timeout=120)
    if q[0] != 0:
        r.record("model", ".cbq setup", "unclear error", q[2][-200:])
        return
    b = cbq.read_bytes()
    hlen = struct.unpack_from("<Q", b, 16)[0]
    head = json.loads(b[24:24 + hlen])
    base = (24 + hlen + 63) // 64 * 64
    for t in truncations(len(b), 24 + hlen):
        p = write(r.tmp / "cbq" / ("trunc%d.cbq" % t), b[:t])
        gen(p, "cbq truncated at %d" % t, "error", p)

    def cbq_with(h):
        hs = json.dumps(h, indent=1).encode()
        base2 = (24 + len(hs) + 63) // 64 * 64
        return b[:16] + struct.pack("<Q", len(hs)) + hs + b"\0" * (base2 - 24 - len(hs)) + b[base:]

    for key, v in (("n_layers", 4), ("n_layers", 6), ("dim", 32), ("vocab_size", 256), ("n_heads", 3), ("seq_len", 0)):
        h = json.loads(json.dumps(head))
        if key in h["config"]:
            h["config"][key] = v
            p = write(r.tmp / "cbq" / ("cfg_%s_%s.cbq" % (key, v)), cbq_with(h))
            gen(p, "cbq config %s=%s" % (key, v), "error", p)
    tl = head["tensors"]
    h = json.loads(json.dumps(head))
    big = max(range(len(tl)), key=lambda i: tl[i]["bytes"])
    other = next(i for i in range(len(tl)) if i != big and tl[i]["bytes"] <= tl[big]["bytes"])
    h["tensors"][other]["offset"] = tl[big]["offset"]
    p = write(r.tmp / "cbq" / "alias.cbq", cbq_with(h))
    gen(p, "cbq two tensors at one offset", "error", [p, "overlaps"])
    h = json.loads(json.dumps(head))
    del h["tensors"][2]
    p = write(r.tmp / "cbq" / "missing.cbq", cbq_with(h))
    gen(p, "cbq tensor missing from the header", "error", p)
    h = json.loads(json.dumps(head))
    h["tensors"].append(dict(h["tensors"][0], name="layers.7.wq"))
    p = write(r.tmp / "cbq" / "extra.cbq", cbq_with(h))
    gen(p, "cbq tensor of a layer the config lacks", "error", [p, "layers.7.wq"])
    h = json.loads(json.dumps(head))
    h["tensors"][3]["kind"] = "sparse"
    p = write(r.tmp / "cbq" / "kind.cbq", cbq_with(h))
    gen(p, "cbq tensor of an unknown kind", "error", p)
    for k, (lo, hi) in enumerate([(base, len(b))] * 6):
        p = write(r.tmp / "cbq" / ("payload%d.cbq" % k), flips(b, 900 + k, 1, lo, hi))
        gen(p, "cbq payload bit flipped #%d" % k, "error", [p, "hash"])
    for k in range(15):
        p = write(r.tmp / "cbq" / ("hflip%d.cbq" % k), flips(b, 700 + k, 2, 24, 24 + hlen))
        gen(p, "cbq header bits flipped #%d" % k, "either", p)
    r.case("model", "cbq given to bench as FP32", ["bench", "--models", str(cbq), "--reps", "1", "--no-roofline"],
           "error", [str(cbq), "not an FP32 source"])


def bert_cases(r):
    b = r.shared / "models/bert-tiny-sst2"
    if not (b / "model.safetensors").exists():
        return
    st = (b / "model.safetensors").read_bytes()
    cfg = json.loads((b / "config.json").read_text())
    vocab = (b / "vocab.txt").read_text()
    header, payload = safetensors_parts(st)

    def folder(name, cfg_=None, st_=None, vocab_=None):
        d = r.tmp / "bert" / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(cfg_ if cfg_ is not None else cfg))
        (d / "model.safetensors").write_bytes(st_ if st_ is not None else st)
        (d / "vocab.txt").write_text(vocab_ if vocab_ is not None else vocab)
        return str(d)

    def cls(d, name, expect="error", must=None):
        r.case("bert", name, ["classify", "-m", d, "--text", "a gripping, funny film"], expect, must or "")

    hlen = struct.unpack_from("<Q", st, 0)[0]
    for t in truncations(len(st), 8 + hlen)[:10]:
        cls(folder("trunc%d" % t, st_=st[:t]), "bert safetensors truncated at %d" % t, "error", "model.safetensors")
    for key, vals in (("num_hidden_layers", (1, 3, 0)), ("hidden_size", (64, 0)), ("num_attention_heads", (3, 0)),
                      ("intermediate_size", (256,)), ("vocab_size", (30000, 40000)), ("max_position_embeddings", (64,)),
                      ("type_vocab_size", (1,)), ("hidden_act", ("swish",)), ("id2label", ({"0": "a"}, []))):
        for v in vals:
            c = dict(cfg)
            c[key] = v
            cls(folder("cfg_%s_%s" % (key, v), cfg_=c), "bert config %s=%s" % (key, v), "error", "config.json" if key not in ("num_hidden_layers",) else "")
    names = sorted(k for k in header if k != "__metadata__")
    h = json.loads(json.dumps(header))
    h[names[3]]["data_offsets"] = [0, h[names[3]]["data_offsets"][1] - h[names[3]]["data_offsets"][0]]
    cls(folder("overlap", st_=safetensors_bytes(h, payload)), "bert overlapping tensors", "error", "overlap")
    nanp = bytearray(payload)
    off = header["bert.encoder.layer.0.attention.self.query.weight"]["data_offsets"][0]
    struct.pack_into("<f", nanp, off, float("nan"))
    cls(folder("nan", st_=safetensors_bytes(header, bytes(nanp))), "bert NaN weight", "error", "non-finite")
    for victim in names[:5]:
        h = json.loads(json.dumps(header))
        del h[victim]
        cls(folder("missing_%s" % victim, st_=safetensors_bytes(h, payload)), "bert without %s" % victim, "error", victim)
    for k in range(10):
        cls(folder("flip%d" % k, st_=flips(st, 500 + k, 2, 8, 8 + hlen)), "bert header bits flipped #%d" % k, "either")
    # vocabularies
    for text, name, expect, must in (("", "empty", "error", "vocab.txt"),
                                     ("[PAD]\n[UNK]\n", "two lines", "error", "vocab.txt"),
                                     ("\n".join(vocab.splitlines()[:1000]) + "\n", "1000 of 30522 tokens", "either", "vocab.txt"),
                                     (vocab.replace("[UNK]", "[UNKNOWN]"), "no [UNK]", "error", "[UNK]"),
                                     (vocab.replace("[CLS]", "[CLASS]"), "no [CLS]", "error", "[CLS]"),
                                     (vocab.replace("\n", "\r\n"), "CRLF", "either", "vocab.txt"),
                                     (vocab + vocab, "every token twice", "either", "vocab.txt"),
                                     ("\x00\xff garbage" * 100, "binary", "error", "vocab.txt")):
        def warn_check(rc, out, err, name=name):
            if rc == 0 and name == "1000 of 30522 tokens" and "vocab" not in err.lower():
                return "silent wrong"
            return None
        d = folder("vocab_" + name.replace(" ", "_"), vocab_=text)
        r.case("bert", "vocab.txt " + name, ["classify", "-m", d, "--text", "a gripping, funny film"], expect, must,
               check=warn_check)
    # classifier inputs
    for content, name in (("", "empty"), ("sentence\tlabel\n", "header only"), ("\0\0\0", "NULs"),
                          ("sentence\tlabel\nfine\tseven\n", "label not a number")):
        p = write(r.tmp / "bert" / ("in_%s.tsv" % name.replace(" ", "_")), content.encode())
        r.case("bert", "classify -i %s" % name, ["classify", "-m", "synthetic:bert-tiny", "--vocab", str(b / "vocab.txt"), "-i", p], "either", p)
    r.case("bert", "classify -i a folder", ["classify", "-m", "synthetic:bert-tiny", "-i", str(r.tmp)], "error", str(r.tmp))
    r.case("bert", "classify --max-length 0", ["classify", "-m", "synthetic:bert-tiny", "--text", "x", "--max-length", "0"], "error", "max-length")
    r.case("bert", "classify --max-length 1e6", ["classify", "-m", "synthetic:bert-tiny", "--text", "x", "--max-length", "1000000"], "error", "max-length")


def tokenizer_cases(r):
    s = r.shared / "models/stories260K"
    tok = (s / "tok512.bin").read_bytes()
    model = str(s / "stories260K.bin")
    for t in truncations(len(tok), 4):
        p = write(r.tmp / "tok" / ("trunc%d.bin" % t), tok[:t])
        r.case("tokenizer", "tok512 truncated at %d" % t, ["generate", "-m", model, "-z", p, "-n", "8", "-i", "Once upon a time"], "error", p)
    for v in (0, -1, 2**31 - 1, 1):
        p = write(r.tmp / "tok" / ("maxlen%d.bin" % v), patched(tok, 0, "<i", v))
        r.case("tokenizer", "tok512 max_token_length=%d" % v, ["generate", "-m", model, "-z", p, "-n", "8", "-i", "Once upon a time"], "either", p)
    for what, val in (("NaN score", float("nan")), ("+inf score", float("inf"))):
        p = write(r.tmp / "tok" / ("score_%s.bin" % what.split()[0]), patched(tok, 4, "<f", val))
        r.case("tokenizer", "tok512 " + what, ["generate", "-m", model, "-z", p, "-n", "8", "-i", "Once upon a time"], "error", [p, "score"])
    for k, v in enumerate((-1, 0, 2**31 - 1, 100000)):
        p = write(r.tmp / "tok" / ("len%d.bin" % k), patched(tok, 8, "<i", v))
        r.case("tokenizer", "tok512 token 0 length=%d" % v, ["generate", "-m", model, "-z", p, "-n", "8", "-i", "Once upon a time"], "either", p)
    for k in range(12):
        p = write(r.tmp / "tok" / ("flip%d.bin" % k), flips(tok, 40 + k, 3, 0, len(tok)))
        r.case("tokenizer", "tok512 bits flipped #%d" % k, ["generate", "-m", model, "-z", p, "-n", "8", "-i", "Once upon a time"], "either", p)
    big = str(r.shared / "models/bert-tiny-sst2/vocab.txt")
    r.case("tokenizer", "vocab.txt as a llama tokenizer", ["generate", "-m", model, "-z", big, "-n", "8"], "error", big)
    r.case("tokenizer", "model as its own tokenizer", ["generate", "-m", model, "-z", model, "-n", "8"], "error", model)


SCENARIO_KEYS = None


def scenario_cases(r):
    quick = str(ROOT / "scenarios/quickstart.toml")
    db = str(r.canary)
    base = ["run", quick, "--db", db, "--dry-run", "--set", "model.source=sut:null"]
    # every key of every shipped scenario, given values of the wrong type and out of range, each
    # through the scenario that holds it
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        tomllib = None
    seen = set()
    for f in sorted((ROOT / "scenarios").glob("*.toml")):
        if tomllib is None:
            break
        keys = []

        def walk(t, prefix=""):
            for k, v in t.items():
                if isinstance(v, dict):
                    walk(v, prefix + k + ".")
                else:
                    keys.append(prefix + k)
        walk(tomllib.loads(f.read_text()))
        for key in keys:
            if key == "model.source" or key in seen:
                continue
            seen.add(key)
            for v in ('"x"', "-1", "1e30", "[]", "{a=1}", "nan"):
                r.case("scenario", "%s = %s" % (key, v), ["run", str(f), "--db", db, "--dry-run", "--set", "%s=%s" % (key, v)],
                       "either", key, timeout=30)
    for key in ("run.min_duraton_ms", "workload.gen_token", "matrix.thread", "load.tagret_qps", "nonsense", "slo.p95"):
        r.case("scenario", "misspelt key %s" % key, base + ["--set", "%s=1" % key], "error", key.split(".")[-1])
    texts = {
        "empty": "", "binary": "\x00\x01\x02\xff", "only comment": "# nothing\n",
        "duplicate key": '[model]\nsource = "sut:null"\nsource = "sut:null"\n',
        "unterminated string": '[model]\nsource = "sut:null\n',
        "no model": "[run]\nmin_queries = 2\n",
        "table twice": '[model]\nsource = "sut:null"\n[model]\nsource = "sut:null"\n',
        "deep header": "[" + ".".join(["t"] * 40000) + "]\nx = 1\n",
        "deep arrays": "x = " + "[" * 100000 + "]" * 100000 + "\n",
        "deep inline tables": "x = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n",
        "2 MiB": '[model]\nsource = "sut:null"\n' + "# " + "x" * (2 << 20) + "\n",
        "huge integer": '[model]\nsource = "sut:null"\n[run]\nmin_queries = 99999999999999999999999\n',
        "threads list of 10^6": '[model]\nsource = "sut:null"\n[matrix]\nthreads = [' + ",".join(["1"] * 1000000) + "]\n",
    }
    for name, text in texts.items():
        p = write(r.tmp / "scen" / (name.replace(" ", "_") + ".toml"), text.encode("utf-8", "surrogateescape"))
        r.case("scenario", "scenario file: " + name, ["run", p, "--db", db, "--dry-run"], "error", p, timeout=60)
    os.mkfifo(r.tmp / "scen" / "fifo.toml")
    r.case("scenario", "scenario is a FIFO", ["run", str(r.tmp / "scen" / "fifo.toml"), "--db", db], "error", "not a regular file", timeout=20)
    r.case("scenario", "scenario is a folder", ["run", str(r.tmp / "scen"), "--db", db], "error", "not a regular file")
    r.case("scenario", "scenario missing", ["run", str(r.tmp / "nope.toml"), "--db", db], "error", "nope.toml")
    for v in ("10000000", "1e9"):
        r.case("scenario", "target_qps %s" % v, ["run", quick, "--db", db, "--set", "model.source=sut:null", "--set", "load.target_qps=%s" % v], "error", "target_qps")
    for v in ("0", "-1", "nan", "inf", "1e9", '"high"'):
        r.case("scenario", "burstiness %s" % v, ["run", quick, "--db", db, "--set", "model.source=sut:null", "--set", "load.burstiness=%s" % v],
               "error", "load.burstiness")
    r.case("scenario", "burstiness with closed_loop", ["run", quick, "--db", db, "--set", "model.source=sut:null", "--set", "load.pattern=closed_loop",
                                                       "--set", "load.burstiness=2"], "error", ["load.burstiness", "closed_loop"])
    for spec in ("sut:batch-sleep?step_ms=0", "sut:batch-sleep?max_batch=0", "sut:batch-sleep?step_ms=1e99", "sut:batch-sleep?x=1"):
        r.case("scenario", "model " + spec, ["run", quick, "--db", db, "--set", "model.source=" + spec], "error", "sut:batch-sleep")
    r.case("scenario", "7B f32 under 16 GiB", ["run", quick, "--db", db, "--set", "model.source=synthetic:llama2-7b", "--set", "matrix.format=[\"f32\"]"],
           "error", "needs", env={"CIBENCH_MEMORY_AVAILABLE_BYTES": str(16 << 30)}, store=db)
    r.case("scenario", "gen_tokens past the context", ["run", quick, "--db", db, "--set", "model.source=synthetic:stories260k", "--set", "workload.gen_tokens=600"],
           "error", "gen_tokens", store=db)


def store_cases(r):
    db = str(r.canary)
    quick = str(ROOT / "scenarios/quickstart.toml")
    null = ["--set", "model.source=sut:null", "--set", "run.min_duration_ms=300", "--set", "run.min_queries=50"]
    # kill -9 at several moments of a run; the runs stored before survive, the store opens
    for delay in (0.05, 0.1, 0.2, 0.3, 0.5, 0.8, 1.2, 1.6, 2.5):
        before = store_state(db)
        p = subprocess.Popen([r.cibench, "run", quick, "--db", db] + null + ["--set", "run.min_duration_ms=2000"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        after = store_state(db)
        ok = states_keep(before, after)
        lst = r.exec([r.cibench, "list", "--db", db])
        outcome = "clear error" if ok and lst[0] == 0 else "data lost"
        r.record("store", "kill -9 after %.2f s" % delay, outcome,
                 "integrity %s, %d runs, list rc %s" % (after["ok"], len(after["runs"]), lst[0]))
    # kill -9 during the migration of an old store
    fixture = ROOT / "tests/fixtures/store-schema3.sqlite"
    for delay in (0.0, 0.005, 0.01, 0.02, 0.05):
        p3 = r.tmp / ("mig%s.sqlite" % delay)
        shutil.copy(fixture, p3)
        before = store_state(str(p3))
        p = subprocess.Popen([r.cibench, "list", "--db", str(p3)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        lst = r.exec([r.cibench, "list", "--db", str(p3)])
        after = store_state(str(p3))
        same = [x[0] for x in before["runs"]] == [x[0] for x in after["runs"]] and after["ok"] == "ok"
        r.record("store", "kill -9 migrating schema 3 after %s s" % delay, "clear error" if same and lst[0] == 0 else "data lost",
                 "list rc %s" % lst[0])
    # many processes creating and migrating one new store at once
    for trial in range(4):
        fresh = r.tmp / ("fleet%d.sqlite" % trial)
        procs = [subprocess.Popen([r.cibench, "run", quick, "--db", str(fresh), "--set", "model.source=sut:null",
                                   "--set", "run.min_duration_ms=50", "--set", "run.min_queries=2"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(6)]
        rcs = [(p.wait(), p.stderr.read().decode()[-200:]) for p in procs]
        st = store_state(str(fresh))
        good = all(rc == 0 for rc, _ in rcs) and len([x for x in st["runs"] if x[1] == "complete"]) == 6
        r.record("store", "6 processes on one new store #%d" % trial, "clear error" if good else "data lost",
                 "; ".join(e.strip().splitlines()[-1] for rc, e in rcs if rc != 0 and e.strip())[:240])
    # read-only folder and file (as an unprivileged user: root ignores permissions)
    ro = r.tmp / "ro"
    ro.mkdir()
    shutil.copy(db, ro / "r.sqlite")
    for side in ("-wal", "-shm"):
        if os.path.exists(db + side):
            shutil.copy(db + side, str(ro / "r.sqlite") + side)
    os.chmod(ro, 0o755)
    for f in ro.iterdir():
        os.chmod(f, 0o644)
    os.chmod(r.tmp, 0o755)
    for cmd in (["list"], ["show", "last"], ["export", "last", "--format", "json"], ["compare", "1", "2"]):
        r.case("store", "read-only: " + " ".join(cmd), cmd + ["--db", str(ro / "r.sqlite")], "ok", user=65534)
    r.case("store", "read-only: run writes", ["run", quick, "--db", str(ro / "r.sqlite")] + null, "error", "r.sqlite", user=65534)
    # a full disk: a small tmpfs when this process may mount one
    full = r.tmp / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(full)], capture_output=True).returncode == 0:
        try:
            c = str(full / "c.sqlite")
            r.exec([r.cibench, "run", quick, "--db", c, "--set", "model.source=sut:null",
                    "--set", "run.min_duration_ms=50", "--set", "run.min_queries=5"])
            state = store_state(c)
            # fill the disk but for 24 KiB
            st = os.statvfs(full)
            free = st.f_bavail * st.f_frsize
            with open(full / "filler", "wb") as f:
                f.write(b"\0" * max(0, free - 24 * 1024))
            r.case("store", "full disk: run", ["run", quick, "--db", c] + null + ["--set", "run.min_queries=20000"],
                   "error", ["c.sqlite", "is the disk full?"], timeout=120)
            r.case("store", "full disk: list", ["list", "--db", c], "ok")
            r.case("store", "full disk: show", ["show", "1", "--db", c], "ok")
            r.case("store", "full disk: report", ["report", "1", "--db", c, "--out", str(full / "rep")], "error", "report")
            r.case("store", "full disk: quantize", ["quantize", "-m", "synthetic:stories260k", "-f", "int8", "-o", str(full / "m.cbq")],
                   "error", "m.cbq")
            r.case("store", "full disk: export", ["export", "1", "--db", c, "-o", str(full / "e.json"), "--format", "json"],
                   "error", "e.json")
            leftovers = sorted(x.name for x in full.iterdir() if ".tmp." in x.name)
            r.record("store", "full disk: no partial outputs left", "data lost" if leftovers else "clear error", " ".join(leftovers))
            os.remove(full / "filler")
            after = store_state(c)
            r.record("store", "full disk: earlier runs intact", "clear error" if states_keep(state, after) else "data lost",
                     "before %s %s, after %s %s" % (state["ok"], state["runs"], after["ok"], after["runs"]))
        finally:
            subprocess.run(["umount", "-l", str(full)])
    # damaged and foreign files as stores
    good = Path(db).read_bytes()
    cases = {"empty file (a new store)": (b"", "ok"), "text file": (b"hello\n" * 100, "error"),
             "half a store": (good[: len(good) // 2], "either"), "first page zeroed": (b"\0" * 4096 + good[4096:], "error"),
             "pages scrambled": (flips(good, 77, 200, 100, len(good)), "either")}
    for name, (data, expect) in cases.items():
        p = write(r.tmp / "dam" / (name.replace(" ", "_") + ".sqlite"), data)
        for cmd in (["list"], ["show", "last"], ["report", "last", "--out", str(r.tmp / "dam" / "rep")]):
            r.case("store", "%s: %s" % (name, cmd[0]), cmd + ["--db", p], "either" if expect != "error" else "error", p)
    for sql, name, must in (("CREATE TABLE people (name TEXT)", "another program's database", "not a cibench results database"),
                            ("PRAGMA user_version = -1; CREATE TABLE runs (x)", "user_version -1", "user_version is -1"),
                            ("PRAGMA user_version = 99", "a newer schema", "newer than this cibench")):
        p = r.tmp / "foreign" / (name.replace(" ", "_").replace("'", "") + ".sqlite")
        p.parent.mkdir(exist_ok=True)
        con = sqlite3.connect(p)
        con.executescript(sql)
        con.close()
        before = p.read_bytes()
        for cmd in (["list"], ["run", quick] + null):
            r.case("store", "%s: %s" % (name, cmd[0]), cmd + ["--db", str(p)], "error", must)
        if p.read_bytes() != before:
            r.record("store", "%s: left unchanged" % name, "data lost", "the file was modified")


def command_cases(r):
    db = str(r.canary)
    for ref in ("0", "-1", "999999", "abc", "last~999", "", "1.5", "9223372036854775808", "last~-1", "last~x", " 1"):
        for cmd in (["show", ref], ["export", ref], ["report", ref, "--out", str(r.tmp / "rep")], ["compare", ref, "1"]):
            r.case("commands", "%s %r" % (cmd[0], ref), cmd + ["--db", db], "error", "", store=db)
    for path, name in ((str(r.tmp / "nope" / "x.sqlite"), "missing folder"), (str(r.tmp), "a folder"),
                       ("/dev/null", "/dev/null"), ("/proc/self/status", "a /proc file")):
        for cmd in (["list"], ["show", "last"]):
            r.case("commands", "%s --db %s" % (cmd[0], name), cmd + ["--db", path], "error", "")
    for opt, val in (("--limit", "-1"), ("--limit", "0"), ("--limit", "x")):
        r.case("commands", "list %s %s" % (opt, val), ["list", "--db", db, opt, val], "error", "limit")
    for args, must in ((["compare", "1", "2", "--resamples", "2000000000"], "resamples"),
                       (["compare", "1", "2", "--resamples", "-5"], "resamples"),
                       (["report", "1", "--out", "/proc/version"], "/proc/version"),
                       (["report", "1", "--x", "nonsense", "--out", str(r.tmp / "rep")], "nonsense"),
                       (["export", "1", "--format", "xml"], "xml"),
                       (["export", "1", "--table", "sqlite_master"], "sqlite_master"),
                       (["export", "1", "-o", str(r.tmp / "no" / "e.csv")], "does not exist")):
        r.case("commands", " ".join(args)[:44], args + ["--db", db], "error", must, store=db)
    for args, must in ((["generate", "-m", "synthetic:stories260k", "-n", "2000"], "context"),
                       (["generate", "-m", "synthetic:stories260k", "-n", "0"], "steps"),
                       (["generate", "-m", "synthetic:stories260k", "-n", "-3"], "steps"),
                       (["generate", "-m", "synthetic:stories260k", "--max-context", "-5"], "max-context"),
                       (["generate", "-m", "synthetic:stories260k", "--max-context", "2000000000"], "max-context"),
                       (["generate", "-m", "synthetic:stories260k", "-T", "0"], "thread count"),
                       (["generate", "-m", "synthetic:stories260k", "-T", "100000"], "thread count"),
                       (["generate", "-m", "synthetic:stories260k", "-t", "-1"], "temperature"),
                       (["generate", "-m", "synthetic:stories260k", "-p", "2"], "top-p"),
                       (["generate", "-m", "synthetic:stories260k", "-f", "int3"], "int3"),
                       (["generate", "-m", "synthetic:stories260k", "--sparsity", "1.5"], "sparsity"),
                       (["generate", "-m", "synthetic:stories260k", "--isa", "sse9"], "sse9"),
                       (["generate", "-m", "synthetic:nope"], "nope"),
                       (["generate", "-m", "synthetic:llama2-7b", "-f", "f32", "-n", "2"], "needs"),
                       (["generate", "-m", "synthetic:stories260k", "--kv", "paged"], "paged"),
                       (["bench", "--models", "synthetic:stories260k", "--reps", "0"], "reps"),
                       (["bench", "--models", "synthetic:stories260k", "--threads", "0"], "thread count"),
                       (["quantize", "-m", "synthetic:stories260k", "-r", "magic", "-o", str(r.tmp / "q.cbq")], "magic"),
                       (["quantize", "-m", "synthetic:stories260k", "--param", "alpha=7", "-r", "smoothquant", "-f", "w8a8", "-o", str(r.tmp / "q.cbq")], "alpha"),
                       (["quantize", "-m", "synthetic:stories260k", "-z", str(r.shared / "models/stories260K/tok512.bin"), "--calib", "nofile:0-4", "-r", "awq", "-o", str(r.tmp / "q.cbq")], "nofile"),
                       (["recipes", "--model", "synthetic:stories260k", "-z", str(r.shared / "models/stories260K/tok512.bin"), "--eval", str(r.shared / "data/tinystories-validation-1000/tinystories_val_first1000.txt") + ":0-4", "--variants", "rtn:int3"], "int3"),
                       (["classify", "-m", "synthetic:bert-tiny", "--limit", "-1", "--text", "x"], "limit")):
        env = {"CIBENCH_MEMORY_AVAILABLE_BYTES": str(24 << 30)} if "llama2-7b" in args else None
        r.case("commands", " ".join(args)[:44], args, "error", must, env=env, timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cibench", default=str(ROOT / "build/release/bin/cibench"))
    ap.add_argument("--shared", default=os.environ.get("CIBENCH_SHARED", str(ROOT.parent / "shared")))
    ap.add_argument("--only", choices=["model", "bert", "tokenizer", "scenario", "store", "commands"])
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args()
    r = Run(args)
    t0 = time.time()
    try:
        quick = str(ROOT / "scenarios/quickstart.toml")
        for _ in range(2):
            rc = r.exec([r.cibench, "run", quick, "--db", str(r.canary), "--set", "model.source=sut:null",
                         "--set", "run.min_duration_ms=50", "--set", "run.min_queries=5"])
            if rc[0] != 0:
                sys.exit("setup run failed: " + rc[2])
        for cat, f in (("model", llama_cases), ("bert", bert_cases), ("tokenizer", tokenizer_cases),
                       ("scenario", scenario_cases), ("store", store_cases), ("commands", command_cases)):
            if not args.only or args.only == cat:
                f(r)
        cpu = r.exec([r.cibench, "sysinfo"])[1]
        cpu_line = next((l for l in cpu.splitlines() if l.startswith("cpu")), "cpu ?")
        version = next((l for l in cpu.splitlines() if l.startswith("cibench")), "cibench ?")
        table, total = r.table()
        print("\n%s\n%s\n%d cases in %.0f s\n\n%s" % (version, cpu_line, len(r.results), time.time() - t0, table))
        return 1 if any(total[o] for o in BAD) else 0
    finally:
        if not args.keep:
            shutil.rmtree(r.tmp, ignore_errors=True)
        else:
            print("scratch kept in", r.tmp)


if __name__ == "__main__":
    sys.exit(main())
