#!/usr/bin/env python3
"""Checks that no code compiled above the x86-64 baseline can run before dispatch chose its level.

usage: scripts/check-isa-isolation.py BUILD_DIR [--json]

cibench is built for the x86-64 baseline (SSE2). Code for a higher level lives in target regions
(engines/kernels/isa_target.h) of the level's kernel files and is reached only through that file's
entry table, which the gate (engines/kernels/isa_entries.cpp) hands out only where the level is
supported. Four checks, each failing with the file, symbol or line at fault:

  flags     No translation unit is compiled with an ISA flag (-mavx2, -mavx512f, -march=...,
            from compile_commands.json), and the compiler's default -march is x86-64: so all code
            outside target regions is baseline code.
  objects   Each kernel file's object (a source with a target region) defines one external symbol,
            its entry table cibench::isa_entry::<file stem>, a constant (no code runs to read it);
            no static initialiser (.init_array, .ctors); and every weak function it defines
            (inline functions and template instantiations from headers: the linker may pick any
            object's copy for the whole program) holds baseline instructions only.
  binaries  In every linked program of the build, every function with external or weak binding
            holds baseline instructions only: whatever copy the linker picked, a call from
            baseline code cannot reach code above the baseline except through a pointer from a
            gated entry table. Code above the baseline sits in local functions only.
  gate      Each entry table is named only by its declaration (isa_entries.h), its definition (its
            kernel file) and once in the gate, as gated(Isa::<its level>, ...), which returns it
            only where isa_supported(level); isa_entries.h is included by the kernel files and
            the gate alone. So every call into a kernel file is behind dispatch.

"Above the baseline" is read off the disassembly: VEX/EVEX instructions (every AVX, AVX2, FMA,
F16C, AVX-512 and VNNI mnemonic starts with v), AVX-512 mask registers, AMX tile instructions,
ymm/zmm registers, and the SSE3..SSE4.2, POPCNT, BMI, LZCNT and MOVBE instructions.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("engines", "harness", "gui", "reports", "tests", "tools")
ENTRY_HEADER = "engines/kernels/isa_entries.h"
GATE_SOURCE = "engines/kernels/isa_entries.cpp"
# A file's level from its stem's suffix (fmt_avx512vnni.cpp -> avx512_vnni).
LEVEL_SUFFIXES = (("avx512vnni", "avx512_vnni"), ("avx512", "avx512"), ("avx2", "avx2"), ("amx", "amx"))

ISA_FLAG = re.compile(r"^-m(avx\S*|fma\S*|f16c|amx\S*|sse3|ssse3|sse4\S*|bmi\S*|popcnt|lzcnt|movbe|"
                      r"pclmul|aes|gfni|vaes|vpclmulqdq|sha|xsave\S*|adx|rdrnd|rdseed)$|^-march=(?!x86-64$)")
TARGET_REGION = re.compile(r"^\s*CIBENCH_TARGET_BEGIN_\w+\s*$", re.M)
TARGET_ANY = re.compile(r"CIBENCH_TARGET_BEGIN|__attribute__\s*\(\(\s*target\s*\(|#\s*pragma\s+GCC\s+target|"
                        r"#\s*pragma\s+clang\s+attribute\s+push")

# Baseline x86-64 mnemonics that start with v or k do not occur in compiled C++ (verr, verw).
ABOVE_BASELINE_MNEMONICS = set("""
addsubpd addsubps haddpd haddps hsubpd hsubps lddqu movddup movshdup movsldup monitor mwait fisttp
pabsb pabsw pabsd palignr phaddw phaddd phaddsw phsubw phsubd phsubsw pmaddubsw pmulhrsw pshufb
psignb psignw psignd
blendpd blendps blendvpd blendvps dppd dpps extractps insertps movntdqa mpsadbw packusdw pblendvb
pblendw pcmpeqq pextrb pextrd pextrq phminposuw pinsrb pinsrd pinsrq pmaxsb pmaxsd pmaxud pmaxuw
pminsb pminsd pminud pminuw pmovsxbd pmovsxbq pmovsxbw pmovsxdq pmovsxwd pmovsxwq pmovzxbd pmovzxbq
pmovzxbw pmovzxdq pmovzxwd pmovzxwq pmuldq pmulld ptest roundpd roundps roundsd roundss
crc32 crc32b crc32w crc32l crc32q pcmpestri pcmpestrm pcmpistri pcmpistrm pcmpgtq
popcnt lzcnt tzcnt andn bextr blsi blsmsk blsr bzhi mulx pdep pext rorx sarx shlx shrx movbe
ldtilecfg sttilecfg tilerelease tilezero tileloadd tileloaddt1 tilestored tdpbssd tdpbsud tdpbusd
tdpbuud tdpbf16ps tdpfp16ps
""".split())
HIGH_REGISTER = re.compile(r"%[yz]mm\d|%k[0-7]\b|%xmm(1[6-9]|2\d|3[01])\b|%tmm\d")
PREFIXES = {"lock", "rep", "repz", "repnz", "repe", "repne", "notrack", "bnd", "data16", "addr32", "cs", "ds",
            "es", "fs", "gs", "ss", "rex", "rex.w", "{vex}", "{vex3}", "{evex}"}


def above_baseline(mnemonic, operands):
    m = mnemonic.lower()
    if m.startswith("v") and m not in ("verr", "verw"):
        return True
    if m.startswith("k") and len(m) > 2 and m[1] in "admnoorstux":  # kmovw, kandw, kortestw, kshiftlw ...
        return True
    if m in ABOVE_BASELINE_MNEMONICS or m.rstrip("bwlq") in ABOVE_BASELINE_MNEMONICS:
        return True
    return bool(HIGH_REGISTER.search(operands))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()[:400]}")
    return r.stdout


def disassembly(path):
    """{address: (first_instruction_above_baseline or None, instruction count)} per function."""
    funcs = {}
    cur = None
    hit = None
    count = 0
    head = re.compile(r"^([0-9a-f]+) <(.+)>:$")
    for line in run(["objdump", "-d", "--no-show-raw-insn", "-w", path]).splitlines():
        h = head.match(line)
        if h:
            if cur is not None:
                funcs[cur] = (hit, count)
            cur, hit, count = int(h.group(1), 16), None, 0
            continue
        if cur is None or "\t" not in line:
            continue
        insn = line.split("\t", 1)[1].strip()
        if not insn or insn.startswith("("):
            continue
        parts = insn.split(None, 1)
        while parts and parts[0] in PREFIXES and len(parts) > 1:
            parts = parts[1].split(None, 1)
        mnemonic = parts[0] if parts else ""
        operands = parts[1] if len(parts) > 1 else ""
        count += 1
        if hit is None and above_baseline(mnemonic, operands):
            hit = insn
    if cur is not None:
        funcs[cur] = (hit, count)
    return funcs


def symbols(path):
    """[(name, type letter, address, section)] of the defined symbols (objdump -t: binding, section)."""
    out = []
    for line in run(["objdump", "-t", "-w", path]).splitlines():
        # 0000000000000000 l    d  .text\t0000000000000000 .text
        m = re.match(r"^([0-9a-f]+) (.{7}) (\S+)\t([0-9a-f]+) (?:\.hidden )?(.+)$", line)
        if not m:
            continue
        addr, flags, section, _size, name = m.groups()
        name = name.strip()
        if section == "*UND*":
            continue
        binding = "g" if "g" in flags[0:2] or flags[0] == "u" else ("w" if flags[1] == "w" else "l")
        kind = "F" if "F" in flags else ("O" if "O" in flags else ("d" if "d" in flags else " "))
        out.append((name, binding, kind, int(addr, 16), section))
    return out


def demangle(names):
    if not names:
        return {}
    r = subprocess.run(["c++filt"], input="\n".join(names), stdout=subprocess.PIPE, text=True)
    return dict(zip(names, r.stdout.splitlines()))


def level_of(stem):
    for suffix, level in LEVEL_SUFFIXES:
        if stem.endswith("_" + suffix):
            return level
    return None


class Report:
    def __init__(self):
        self.failures = defaultdict(list)
        self.notes = defaultdict(list)

    def fail(self, check, msg):
        self.failures[check].append(msg)

    def note(self, check, msg):
        self.notes[check].append(msg)


def compile_entries(build):
    path = os.path.join(build, "compile_commands.json")
    if not os.path.isfile(path):
        raise RuntimeError(f"{path}: not found (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON, as the presets do)")
    with open(path) as f:
        entries = json.load(f)
    out = []
    for e in entries:
        args = e.get("arguments") or shlex.split(e["command"])
        obj = None
        for i, a in enumerate(args):
            if a == "-o" and i + 1 < len(args):
                obj = args[i + 1]
        if obj and not os.path.isabs(obj):
            obj = os.path.join(e["directory"], obj)
        src = os.path.relpath(os.path.realpath(os.path.join(e["directory"], e["file"])), ROOT)
        out.append((src, args, obj))
    return out


def check_flags(build, entries, rep):
    compiler = None
    for src, args, _ in entries:
        compiler = compiler or args[0]
        bad = [a for a in args[1:] if ISA_FLAG.match(a)]
        if bad:
            rep.fail("flags", f"{src}: compiled with {' '.join(bad)} (code above the baseline belongs in a "
                              f"CIBENCH_TARGET_BEGIN region, not in a whole translation unit)")
    if compiler:
        out = run([compiler, "-Q", "--help=target"])
        m = re.search(r"^\s*-march=\s*(\S+)", out, re.M)
        if not m or m.group(1) != "x86-64":
            rep.fail("flags", f"{compiler}'s default is -march={m.group(1) if m else '?'}, not x86-64: every "
                              f"file would be built above the baseline")
        else:
            rep.note("flags", f"{len(entries)} translation units, none with an ISA flag; {compiler} defaults to -march=x86-64")


def isa_sources(entries):
    """Sources with code above the baseline: target regions, target attributes or ISA flags."""
    found = {}
    for src, args, obj in entries:
        path = os.path.join(ROOT, src)
        try:
            text = open(path, encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        region = bool(TARGET_REGION.search(text))
        flagged = any(ISA_FLAG.match(a) for a in args[1:])
        if region or flagged or TARGET_ANY.search(text):
            found[src] = (obj, region or flagged)
    return found


def declared_entries():
    path = os.path.join(ROOT, ENTRY_HEADER)
    if not os.path.isfile(path):
        return None
    text = open(path).read()
    return set(re.findall(r"^\s*extern\s+const\s+[\w:<>]+\s+(\w+)\s*;", text, re.M))


def check_objects(sources, rep):
    entries = declared_entries()
    if entries is None:
        rep.fail("objects", f"{ENTRY_HEADER}: absent, so no kernel file declares its entry table")
        entries = set()
    for src, (obj, whole_file) in sorted(sources.items()):
        if not whole_file:
            rep.note("objects", f"{src}: functions with target attributes in a baseline file (their binding: `binaries`)")
            continue
        if not obj or not os.path.isfile(obj):
            rep.fail("objects", f"{src}: its object file was not found in the build ({obj})")
            continue
        stem = os.path.splitext(os.path.basename(src))[0]
        syms = symbols(obj)
        names = demangle([s[0] for s in syms])
        sanitizer_ctors = check_initialisers(src, obj, syms, rep)
        by_section_addr = {}
        weak_ok = 0
        for name, binding, kind, addr, section in syms:
            pretty = names.get(name, name)
            if binding == "g":
                if whole_file and pretty == f"cibench::isa_entry::{stem}" and kind == "O" and stem in entries:
                    continue
                # AddressSanitizer's one-byte ODR indicator of that table (-fsanitize=address)
                entry_mangled = next((n for n, p in names.items() if p == f"cibench::isa_entry::{stem}"), None)
                if entry_mangled and name == "__odr_asan." + entry_mangled and kind == "O":
                    continue
                if not whole_file and kind == "F":
                    continue  # a baseline file with target attributes: its global functions go to `binaries`
                what = "function" if kind == "F" else "object"
                rep.fail("objects", f"{src}: defines the external {what} {pretty} (only cibench::isa_entry::{stem}, "
                                    f"declared in {ENTRY_HEADER}, may leave a kernel file)")
            elif binding == "w" and kind == "F":
                # each weak function sits alone in its COMDAT section at offset 0 of that section
                by_section_addr[(section, addr)] = pretty
        if by_section_addr:
            per_section = disassembly_by_section(obj)
            for (section, addr), pretty in sorted(by_section_addr.items()):
                hit = per_section.get((section, addr))
                if hit is None:
                    continue
                if hit[0]:
                    rep.fail("objects", f"{src}: the weak copy of {pretty} holds '{hit[0]}': the linker may pick it "
                                        f"for the whole program, so baseline code would run it on every CPU")
                else:
                    weak_ok += 1
        if whole_file:
            ctors = f"; {sanitizer_ctors} sanitizer constructor(s), baseline code" if sanitizer_ctors else ""
            rep.note("objects", f"{src}: exports cibench::isa_entry::{stem} only; {weak_ok} weak copies (inline "
                                f"functions and templates from headers), all baseline code; no static initialiser{ctors}")


# Constructors a sanitizer adds to every object (they register its globals with the runtime):
# GCC's _sub_I_00099_N at priority 99, Clang's asan.module_ctor / tsan.module_ctor.
SANITIZER_CTOR = re.compile(r"^(_sub_I_00099_\d+|[a-z]+san\.module_ctor|sancov\.module_ctor.*)$")


def check_initialisers(src, obj, syms, rep):
    """Fails on every start-up function of a kernel file (.init_array, .ctors, .preinit_array) but a
    sanitizer's constructor holding baseline instructions only; returns how many of those there are."""
    relocs = run(["objdump", "-r", "-w", obj])
    targets = []
    current = None
    for line in relocs.splitlines():
        m = re.match(r"^RELOCATION RECORDS FOR \[(\S+)\]:", line)
        if m:
            current = m.group(1)
            continue
        if current and re.match(r"^\.(init_array|ctors|preinit_array)(\.\d+)?$", current):
            r = re.match(r"^[0-9a-f]+\s+\S+\s+(\S+?)(?:\+0x([0-9a-f]+))?$", line.strip())
            if r:
                targets.append((current, r.group(1), int(r.group(2) or "0", 16)))
    if not targets:
        return 0
    by_place = {(sec, addr): name for name, binding, kind, addr, sec in syms if kind == "F"}
    by_name = {name: (sec, addr) for name, binding, kind, addr, sec in syms if kind == "F"}
    code = disassembly_by_section(obj)
    ok = 0
    for init_sec, value, offset in targets:
        if value in by_name:
            place, fn = by_name[value], value
        else:
            place, fn = (value, offset), by_place.get((value, offset), f"{value}+0x{offset:x}")
        hit = code.get(place, (None, 0))[0]
        if not SANITIZER_CTOR.match(fn):
            rep.fail("objects", f"{src}: has a static initialiser ({init_sec}: {fn}): code of this file runs at "
                                f"start-up on every CPU")
        elif hit:
            rep.fail("objects", f"{src}: its sanitizer constructor {fn} holds '{hit}' and runs at start-up on every CPU")
        else:
            ok += 1
    return ok


def disassembly_by_section(obj):
    """{(section, offset): (hit, count)} for an object file, each section disassembled on its own."""
    out = {}
    cur_sec = None
    head_sec = re.compile(r"^Disassembly of section (\S+):$")
    head_fn = re.compile(r"^([0-9a-f]+) <(.+)>:$")
    key = None
    hit, count = None, 0
    for line in run(["objdump", "-d", "--no-show-raw-insn", "-w", obj]).splitlines():
        s = head_sec.match(line)
        if s:
            if key is not None:
                out[key] = (hit, count)
            key = None
            cur_sec = s.group(1)
            continue
        h = head_fn.match(line)
        if h:
            if key is not None:
                out[key] = (hit, count)
            key, hit, count = (cur_sec, int(h.group(1), 16)), None, 0
            continue
        if key is None or "\t" not in line:
            continue
        insn = line.split("\t", 1)[1].strip()
        if not insn or insn.startswith("("):
            continue
        parts = insn.split(None, 1)
        while parts and parts[0] in PREFIXES and len(parts) > 1:
            parts = parts[1].split(None, 1)
        count += 1
        if hit is None and parts and above_baseline(parts[0], parts[1] if len(parts) > 1 else ""):
            hit = insn
    if key is not None:
        out[key] = (hit, count)
    return out


def linked_programs(build):
    progs = []
    for d, _, files in os.walk(build):
        if "CMakeFiles" in d:
            continue
        for f in files:
            p = os.path.join(d, f)
            if os.access(p, os.X_OK) and not f.endswith((".sh", ".py", ".so")) and os.path.isfile(p):
                with open(p, "rb") as fh:
                    if fh.read(4) == b"\x7fELF":
                        progs.append(p)
    return sorted(progs)


def check_binaries(build, rep):
    for prog in linked_programs(build):
        funcs = disassembly(prog)
        syms = symbols(prog)
        exported = defaultdict(list)
        for name, binding, kind, addr, section in syms:
            if kind == "F" and binding in ("g", "w") and section.startswith(".text"):
                exported[addr].append(name)
        ranked = []
        n_local_above = 0
        local_addrs = {a for (n, b, k, a, s) in syms if k == "F" and b == "l"}
        for addr, (hit, count) in funcs.items():
            if not hit:
                continue
            if addr in exported:
                ranked.append((addr, exported[addr], hit))
            elif addr in local_addrs:
                n_local_above += 1
        rel = os.path.relpath(prog, build)
        if ranked:
            names = demangle([n for _, ns, _ in ranked for n in ns])
            for addr, ns, hit in sorted(ranked)[:40]:
                rep.fail("binaries", f"{rel}: {' = '.join(names.get(n, n) for n in ns)} has external binding and "
                                     f"holds '{hit}': any caller reaches it without dispatch")
            if len(ranked) > 40:
                rep.fail("binaries", f"{rel}: ... and {len(ranked) - 40} more such functions")
        else:
            rep.note("binaries", f"{rel}: {sum(len(v) for v in exported.values())} external functions, all baseline; "
                                 f"{n_local_above} local functions above the baseline")


def cpp_files():
    for top in SOURCE_DIRS:
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".cpp", ".h", ".inc", ".cc", ".hpp")):
                    p = os.path.join(d, f)
                    yield os.path.relpath(p, ROOT), open(p, encoding="utf-8", errors="replace").read()


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def check_gate(sources, rep):
    entries = declared_entries()
    if entries is None:
        rep.fail("gate", f"{ENTRY_HEADER}: absent, so nothing routes calls into the kernel files through dispatch")
        return
    kernel_files = {os.path.splitext(os.path.basename(s))[0]: s for s, (_, whole) in sources.items() if whole}
    for stem, src in sorted(kernel_files.items()):
        if stem not in entries:
            rep.fail("gate", f"{src}: has a target region but {ENTRY_HEADER} declares no cibench::isa_entry::{stem}")
    gate_text = None
    include = re.compile(r'#\s*include\s+"' + re.escape(ENTRY_HEADER) + '"')
    uses = defaultdict(list)
    for rel, text in cpp_files():
        code = strip_comments(text)
        if rel == GATE_SOURCE:
            gate_text = code
        if include.search(code) and rel != GATE_SOURCE and rel not in sources and rel != ENTRY_HEADER:
            rep.fail("gate", f"{rel}: includes {ENTRY_HEADER}; only the kernel files and {GATE_SOURCE} may")
        for name in entries:
            for m in re.finditer(r"\b" + re.escape(name) + r"\b", code):
                line = code.count("\n", 0, m.start()) + 1
                uses[name].append((rel, line, code[code.rfind("\n", 0, m.start()) + 1:code.find("\n", m.end())].strip()))
    if gate_text is None:
        rep.fail("gate", f"{GATE_SOURCE}: absent")
        return
    if not re.search(r"return\s+isa_supported\s*\(\s*level\s*\)\s*\?\s*&\s*entry\s*:\s*nullptr\s*;", gate_text):
        rep.fail("gate", f"{GATE_SOURCE}: gated() must read 'return isa_supported(level) ? &entry : nullptr;'")
    for name in sorted(entries):
        level = level_of(name)
        if level is None:
            rep.fail("gate", f"{ENTRY_HEADER}: cibench::isa_entry::{name} names no level (its file's stem ends in _avx2, _avx512, _avx512vnni or _amx)")
            continue
        gated = 0
        for rel, line, text in uses[name]:
            if rel == ENTRY_HEADER:
                continue
            if kernel_files.get(name) == rel and re.search(r"\bconstinit\b.*\b" + name + r"\b", text):
                continue
            if rel == GATE_SOURCE and re.search(r"\bgated\s*\(\s*Isa::" + level + r"\s*,\s*isa_entry::" + name + r"\s*\)", text):
                gated += 1
                continue
            rep.fail("gate", f"{rel}:{line}: names cibench::isa_entry::{name} outside the gate: '{text}'")
        if gated != 1:
            rep.fail("gate", f"{GATE_SOURCE}: cibench::isa_entry::{name} must be handed out once, as gated(Isa::{level}, "
                             f"isa_entry::{name}); found {gated}")
    if not rep.failures.get("gate"):
        rep.note("gate", f"{len(entries)} entry tables ({', '.join(sorted(entries))}), each handed out by "
                         f"{GATE_SOURCE} only where its level is supported")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().split("\n\n")[0] + "\nusage: scripts/check-isa-isolation.py BUILD_DIR", file=sys.stderr)
        return 2
    build = os.path.abspath(argv[1])
    rep = Report()
    try:
        entries = compile_entries(build)
        check_flags(build, entries, rep)
        sources = isa_sources(entries)
        check_objects(sources, rep)
        check_binaries(build, rep)
        check_gate(sources, rep)
    except RuntimeError as e:
        print(f"cibench: check-isa-isolation: {e}", file=sys.stderr)
        return 2
    for check in ("flags", "objects", "binaries", "gate"):
        fails = rep.failures.get(check, [])
        print(f"{check}: {'FAIL (' + str(len(fails)) + ')' if fails else 'ok'}")
        for msg in fails:
            print(f"  {msg}")
        if not fails:
            for msg in rep.notes.get(check, []):
                print(f"  {msg}")
    if rep.failures:
        print(f"cibench: code above the x86-64 baseline can run outside dispatch ({sum(len(v) for v in rep.failures.values())} findings)")
        return 1
    print("cibench: nothing compiled above the x86-64 baseline runs before dispatch chose its level")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
