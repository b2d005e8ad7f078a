#!/usr/bin/env python3
"""Builds the shipped TinyStories tasks (scenarios/tasks/, docs/tasks.md) from the TinyStories
validation text in ../shared/data (stories 500 to 999: disjoint from the calibration slice 0-500
the recipes use). Deterministic: the same file gives the same tasks.

  tinystories-cloze.jsonl     multiple choice: a story's opening sentences, its true next sentence
                              against three sentences from the middle of other stories, of about
                              the same length (so that neither position nor length gives it away)
  tinystories-nextword.jsonl  generation: a story up to a word, the next word as the target

Usage: python3 scripts/make-tinystories-tasks.py [SHARED-DIR] [OUT-DIR]
"""
import json
import random
import re
import sys
from pathlib import Path

shared = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared")
out = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).resolve().parents[1] / "scenarios" / "tasks")
text = (shared / "data/tinystories-validation-1000/tinystories_val_first1000.txt").read_text(encoding="utf-8")
stories = [s.strip() for s in text.split("<|endoftext|>")]
stories = [s for s in stories if s][500:1000]


def sentences(story):
    flat = re.sub(r"\s+", " ", story)
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z\"])", flat)
    return [p.strip() for p in parts if p.strip()]


rng = random.Random(20261207)
pool = []  # (story index, sentence): sentences from the middle of each story
for si, s in enumerate(stories):
    ss = sentences(s)
    pool += [(si, x) for x in ss[3:-1] if 4 <= len(x.split()) <= 25]
opened = []  # (story index, context, next sentence) per usable story
for si, s in enumerate(stories):
    ss = sentences(s)
    if len(ss) < 4:
        continue
    k = 2 if len(" ".join(ss[:2]).split()) >= 12 else 3
    context, nxt = " ".join(ss[:k]), ss[k]
    if len(context.split()) > 60 or not 4 <= len(nxt.split()) <= 25:
        continue
    opened.append((si, context, nxt))

cloze = []
for si, context, nxt in opened[:200]:
    n = len(nxt.split())
    others = [x for sj, x in pool if sj != si and x != nxt and abs(len(x.split()) - n) <= max(2, n // 4)]
    choices = rng.sample(others, 3) + [nxt]
    rng.shuffle(choices)
    cloze.append({"context": context, "choices": choices, "answer": choices.index(nxt)})

nextword = []
for s in stories:
    ss = sentences(s)
    if len(ss) < 3:
        continue
    words = ss[2].split()
    if len(words) < 6:
        continue
    cut = rng.randint(2, len(words) - 2)
    target = re.sub(r"[^A-Za-z']", "", words[cut])
    if not target:
        continue
    nextword.append({"prompt": " ".join(ss[:2] + [" ".join(words[:cut])]), "target": target,
                     "stop": [" ", ".", ",", "!", "?", "\"", "\n"]})
    if len(nextword) == 200:
        break

out.mkdir(parents=True, exist_ok=True)
for name, items in (("tinystories-cloze.jsonl", cloze), ("tinystories-nextword.jsonl", nextword)):
    with open(out / name, "w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    print(f"{out / name}: {len(items)} items")
