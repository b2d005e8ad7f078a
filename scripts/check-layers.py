#!/usr/bin/env python3
"""cibench's layers import only downward: engines <- harness <- reports <- gui.

Fails, naming the file and line, when
  - a source under one layer includes a header of a layer above it ("harness/cli/x.cpp:9:
    includes reports/db.h: harness may include only engines/, harness/");
  - a layer's CMakeLists.txt links a library of a layer above it;
  - a file under gui/ or reports/ is longer than the limit (1,200 lines): one view, one reporter,
    one kind of analysis per file.
Usage: check-layers.py [SOURCE_DIR]   (default: the repository this script is in)
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
LAYERS = ['engines', 'harness', 'reports', 'gui']
LIBS = {'engines': ['cibench_engine'], 'harness': ['cibench_schema', 'cibench_harness'],
        'reports': ['cibench_reports'], 'gui': ['cibench_gui_lib']}
MAX_LINES = 1200
SOURCES = ('.cpp', '.h', '.hpp', '.cc')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

findings = []
files = {layer: [] for layer in LAYERS}
for layer in LAYERS:
    for d, _, names in os.walk(os.path.join(ROOT, layer)):
        for n in sorted(names):
            files[layer].append(os.path.join(d, n))

for i, layer in enumerate(LAYERS):
    allowed = LAYERS[: i + 1]
    above = LAYERS[i + 1:]
    for path in files[layer]:
        rel = os.path.relpath(path, ROOT)
        if path.endswith(SOURCES):
            with open(path, encoding='utf-8', errors='replace') as f:
                lines = f.readlines()
            for no, line in enumerate(lines, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                top = m.group(1).split('/')[0]
                if top in LAYERS and top not in allowed:
                    findings.append(f'{rel}:{no}: includes {m.group(1)}: {layer} may include only '
                                    + ', '.join(a + '/' for a in allowed))
            if layer in ('gui', 'reports') and len(lines) > MAX_LINES:
                findings.append(f'{rel}: {len(lines)} lines, more than {MAX_LINES}: split it (one view, '
                                'one reporter, one kind of analysis per file)')
        elif os.path.basename(path) == 'CMakeLists.txt':
            with open(path, encoding='utf-8') as f:
                text = f.read()
            # Links from this folder's targets, not the target_sources/target_link_libraries a higher
            # layer adds to a lower layer's program (reports/ adds its commands to cibench).
            for m in re.finditer(r'target_link_libraries\(\s*(\S+)([^)]*)\)', text):
                for up in above:
                    for lib in LIBS[up]:
                        if re.search(r'\b' + lib + r'\b', m.group(2)):
                            no = text[: m.start()].count('\n') + 1
                            findings.append(f'{rel}:{no}: {m.group(1)} links {lib} ({up}/), a layer above {layer}/')

n_files = sum(len(v) for v in files.values())
if findings:
    print(f'check-layers: {len(findings)} finding(s) over {n_files} files:')
    for f in findings:
        print('  ' + f)
    sys.exit(1)
print(f'check-layers: {n_files} files under {", ".join(LAYERS)}: every include and link points down '
      f'(engines <- harness <- reports <- gui); no file under gui/ or reports/ above {MAX_LINES} lines')
