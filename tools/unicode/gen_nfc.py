#!/usr/bin/env python3
"""Writes engines/models/unicode_nfc.inc, the tables of cibench's NFC normaliser, from Python's
unicodedata (the Unicode version is named in the file's first line):

  kCccRuns     (first code point of each run of equal canonical combining class) << 8 | class
  kDecomp      canonical decompositions, one step each: {code point, first, second (0 = none)}
               (Hangul syllables are decomposed by the algorithm, not listed)
  kCompose     primary composites: {first << 21 | second, composite}, sorted by key

and, with --cases FILE, test cases: lines "input-hex<TAB>NFC-hex" (code points separated by
spaces) for every code point with a canonical decomposition, its decomposition, reordered
combining marks and Hangul jamo sequences.

  python3 tools/unicode/gen_nfc.py > engines/models/unicode_nfc.inc
  python3 tools/unicode/gen_nfc.py --cases tests/fixtures/unicode/nfc_cases.txt
"""
import sys
import unicodedata as ud


def canonical(cp):
    d = ud.decomposition(chr(cp))
    if not d or d.startswith('<'):
        return None
    return [int(x, 16) for x in d.split()]


def tables():
    ccc_runs, prev = [], None
    decomp, compose = [], []
    for cp in range(0x110000):
        c = ud.combining(chr(cp))
        if c != prev:
            ccc_runs.append((cp << 8) | c)
            prev = c
        d = canonical(cp)
        if d is None:
            continue
        decomp.append((cp, d[0], d[1] if len(d) > 1 else 0))
        # A primary composite: a pair that NFC recomposes (not a singleton, not excluded).
        if len(d) == 2 and ud.normalize('NFC', chr(cp)) == chr(cp):
            compose.append(((d[0] << 21) | d[1], cp))
    compose.sort()
    return ccc_runs, decomp, compose


def emit_array(name, ctype, rows, per_line):
    out = [f'static const {ctype} {name}[] = {{']
    for i in range(0, len(rows), per_line):
        out.append('  ' + ' '.join(r + ',' for r in rows[i:i + per_line]))
    out.append('};')
    return '\n'.join(out)


def write_tables():
    ccc_runs, decomp, compose = tables()
    print(f'// Generated from Python {sys.version.split()[0]} unicodedata (Unicode {ud.unidata_version}) by '
          'tools/unicode/gen_nfc.py;')
    print('// do not edit by hand. See engines/models/unicode_nfc.cpp.')
    print(emit_array('kCccRuns', 'uint32_t', [f'0x{x:x}' for x in ccc_runs], 8))
    print(emit_array('kDecomp', 'Decomp', [f'{{0x{a:x}, 0x{b:x}, 0x{c:x}}}' for a, b, c in decomp], 4))
    print(emit_array('kCompose', 'Compose', [f'{{0x{k:x}ull, 0x{c:x}}}' for k, c in compose], 4))


def hexs(s):
    return ' '.join(f'{ord(ch):x}' for ch in s)


def write_cases(path):
    _, decomp, _ = tables()
    cases = []
    for cp, _, _ in decomp:
        s = chr(cp)
        cases.append(s)
        cases.append(ud.normalize('NFD', s))
    # Reordering: marks of different classes in both orders after a base, and around a composite.
    marks = [0x301, 0x323, 0x31b, 0x327, 0x308, 0x345, 0x5b0, 0x93c]
    for base in [0x41, 0x61, 0x4f, 0x75, 0x3b1, 0x3c9, 0x928]:
        for m1 in marks:
            for m2 in marks:
                cases.append(chr(base) + chr(m1) + chr(m2))
    # Hangul: L V, L V T, LV + T, a syllable followed by a jamo that does not combine.
    for l in range(0x1100, 0x1113, 3):
        for v in range(0x1161, 0x1176, 4):
            cases.append(chr(l) + chr(v))
            cases.append(chr(l) + chr(v) + chr(0x11a8))
            cases.append(chr(l) + chr(v) + chr(0x11c2))
    cases += ['\uac00\u11a8', '\uac01\u11a8', '\uac00\u1161', 'a\u0300\u0301b', '\u0300a', 'e\u0301\u0301',
              'Ame\u0301lie', '\u1e0b\u0323', '\u212b', '\u0958\u093c', 'x' * 3 + '\u0344']
    seen, lines = set(), []
    for s in cases:
        if s in seen:
            continue
        seen.add(s)
        lines.append(f'{hexs(s)}\t{hexs(ud.normalize("NFC", s))}')
    with open(path, 'w') as f:
        f.write(f'# NFC by Python {sys.version.split()[0]} unicodedata (Unicode {ud.unidata_version}), '
                'tools/unicode/gen_nfc.py: input<TAB>output, code points in hex\n')
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--cases':
        write_cases(sys.argv[2])
    elif len(sys.argv) == 1:
        write_tables()
    else:
        sys.exit('usage: gen_nfc.py [--cases FILE]')
