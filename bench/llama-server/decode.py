"""Decode speed of llama.cpp's own server on the prompt of `cargo bench --bench native_llm`

The same system prompt (HERMES_BENCH_RULES rules, default 45: 1,013 tokens) and a question;
first token = a 1-token request with the prompt cached, decode = 48 extra tokens over the
extra time, medians of 3. For the ratio against the built-in engine in one sitting:

    bench/llama-server/setup.sh MODEL.gguf 18080 2 1
    bench/llama-server/.venv/bin/python bench/llama-server/decode.py http://127.0.0.1:18080/v1 [RULES]
"""
import json, time, urllib.request, sys, statistics
url = sys.argv[1] + "/chat/completions"
rules = int(sys.argv[2]) if len(sys.argv) > 2 else 45  # HERMES_BENCH_RULES
rule = "Rule: answer plainly, check each fact before stating it, prefer short lists, and never invent a source. "
system = "You are a helpful assistant. " + rule * rules
q = "Describe the water cycle in a few short sentences."
def ask(n):
    body = json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": q}],
                       "temperature": 0, "max_tokens": n, "cache_prompt": True, "ignore_eos": True}).encode()
    t = time.time()
    r = json.load(urllib.request.urlopen(urllib.request.Request(url, body, {"Content-Type": "application/json"})))
    return time.time() - t, r["usage"]
t0, u = ask(1)
print("first read", round(t0, 2), "s", u)
ones = [ask(1)[0] for _ in range(3)]
longs = []
for _ in range(3):
    t, u = ask(49); longs.append(t)
print("usage", u)
one, long = statistics.median(ones), statistics.median(longs)
print(f"first token {one:.3f} s, decode {(u['completion_tokens']-1)/(long-one):.1f} tokens/s")
