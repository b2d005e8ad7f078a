#!/usr/bin/env bash
# End to end: `cibench generate --chat` with a Hugging Face tokenizer folder whose
# tokenizer_config.json carries a ChatML template: the rendered prompt and its ids (the template's
# <|im_start|>/<|im_end|> one id each, the same text in the user's message byte by byte), the
# template named in the JSON line; --chat-template overrides it; a folder without a template, an
# unknown template and an unknown name are refused with the file, key or names.
# Usage: generate_chat.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# synthetic:stories260k has 512 tokens: the 256 bytes (id = byte value), ChatML's three control
# tokens 256..258, and special padding up to 512.
mkdir "$tmp/tok"
python3 - "$tmp/tok" <<'PY'
import json, sys
d = sys.argv[1]
vocab, extra = {}, 0
for b in range(256):
    printable = 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE
    vocab[chr(b) if printable else chr(256 + extra)] = b
    if not printable: extra += 1
added = []
for i, t in enumerate(["<|im_start|>", "<|im_end|>", "<|endoftext|>"] + ["<pad%d>" % i for i in range(259, 512)]):
    vocab[t] = 256 + i
    added.append({"id": 256 + i, "content": t, "special": True})
json.dump({"version": "1.0", "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
           "model": {"type": "BPE", "vocab": vocab, "merges": []}}, open(d + "/tokenizer.json", "w"))
json.dump({"eos_token": "<|im_end|>",
           "chat_template": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"},
          open(d + "/tokenizer_config.json", "w"))
PY

"$CIBENCH" generate -m synthetic:stories260k -z "$tmp/tok" --system "Be brief." --chat "<|im_end|>hi" \
  --show-prompt -n 64 --json > "$tmp/out.json" 2> "$tmp/err.txt" || fail "generate: $(cat "$tmp/err.txt")"
python3 - "$tmp/out.json" "$tmp/err.txt" "$tmp/tok/tokenizer_config.json" <<'PY' || fail "output: $(cat "$tmp/out.json" "$tmp/err.txt")"
import json, sys
j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
err = open(sys.argv[2]).read()
assert j["chat_template"] == "chatml", j
assert "chat template chatml (%s chat_template)" % sys.argv[3] in err, err
text = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n<|im_end|>hi<|im_end|>\n<|im_start|>assistant\n"
assert "prompt:\n" + text + "\n" in err, err
b = lambda s: list(s.encode())
ids = [256] + b("system\nBe brief.") + [257] + b("\n") + [256] + b("user\n<|im_end|>hi") + [257] + b("\n") + [256] + b("assistant\n")
assert "prompt ids (%d): %s\n" % (len(ids), " ".join(map(str, ids))) in err, err
assert j["prompt_tokens"] == len(ids) and j["token_ids"][:len(ids)] == ids, j
# Generation stops at <|im_end|> (257) or EOS: neither is among the generated ids.
assert 257 not in j["token_ids"][len(ids):], j
PY

# --chat-template overrides the file's template.
"$CIBENCH" generate -m synthetic:stories260k -z "$tmp/tok" --chat "hi" --chat-template zephyr --show-prompt -n 40 \
  > /dev/null 2> "$tmp/err2.txt" || fail "override: $(cat "$tmp/err2.txt")"
grep -q "^chat template zephyr$" "$tmp/err2.txt" || fail "override: $(cat "$tmp/err2.txt")"

# An unknown template names the file and the key; an unknown name lists the names.
python3 -c "import json,sys; json.dump({'chat_template': '{{ messages }}'}, open(sys.argv[1], 'w'))" "$tmp/tok/tokenizer_config.json"
if "$CIBENCH" generate -m synthetic:stories260k -z "$tmp/tok" --chat hi -n 40 2> "$tmp/err3.txt" > /dev/null; then
  fail "an unknown template was accepted"
fi
grep -q "$tmp/tok/tokenizer_config.json: chat_template: a chat template cibench does not recognise" "$tmp/err3.txt" \
  || fail "unknown template: $(cat "$tmp/err3.txt")"
if "$CIBENCH" generate -m synthetic:stories260k -z "$tmp/tok" --chat hi --chat-template nope -n 40 2> "$tmp/err4.txt" > /dev/null; then
  fail "an unknown name was accepted"
fi
grep -q "'nope' is not a chat template cibench knows (known: chatml," "$tmp/err4.txt" || fail "unknown name: $(cat "$tmp/err4.txt")"

# No template anywhere.
echo '{}' > "$tmp/tok/tokenizer_config.json"
if "$CIBENCH" generate -m synthetic:stories260k -z "$tmp/tok" --chat hi -n 40 2> "$tmp/err5.txt" > /dev/null; then
  fail "--chat without a template was accepted"
fi
grep -q "no chat template in $tmp/tok" "$tmp/err5.txt" && grep -q "one of: chatml," "$tmp/err5.txt" \
  || fail "no template: $(cat "$tmp/err5.txt")"
echo "generate_chat: ok"
