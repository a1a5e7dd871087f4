#!/usr/bin/env python3
# Copied from the project's shared tools (shared/tools/conformance.py) so the suite runs from a plain clone.
"""Drives a built qvl-run through the CLI contract (docs/cli.md) on the public fixtures.

usage: conformance.py PATH/TO/qvl-run [--testdata DIR]
Checks, for every golden case: --messages rendering and prompt ids, --dump-pixels (first image) bit
for bit, --dump-logits within 2e-5 of max|ref| (or 5e-2 with identical tokens), the 16 greedy tokens;
every tokenizer case through --raw --tokenize --json; and --video on the video fixtures (video_cases).
Needs /usr/bin/python3 with numpy.
Exit 0 when everything passes."""
import argparse, glob, json, os, struct, subprocess, sys, tempfile
import numpy as np

def read_safetensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]; header = json.loads(f.read(n)); data = f.read()
    dt = {'F32': np.float32, 'I64': np.int64, 'I32': np.int32}
    return {k: np.frombuffer(data[v['data_offsets'][0]:v['data_offsets'][1]], dt[v['dtype']]).reshape(v['shape'])
            for k, v in header.items() if k != '__metadata__'}

def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=600)
        return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')
    except subprocess.TimeoutExpired:
        return 'timeout', '', ''

def rel_err(a, ref):
    a = np.asarray(a, np.float64).ravel(); ref = np.asarray(ref, np.float64).ravel()
    return float('inf') if a.shape != ref.shape else float(np.max(np.abs(a - ref)) / max(np.max(np.abs(ref)), 1e-30))

def video_cases(qvl, td, tmp):
    """--video against transformers' Qwen3VLProcessor (tests/data/videos/cases.json): prompt ids,
    --dump-pixels (pixel_values_videos) bit for bit, the model goldens' greedy tokens, logits and
    --dump-vision features (every frame pair's, in order), --dry-run's token count; a damaged clip exits 4 naming it. The cases' processor size goes in a
    video_preprocessor_config.json of a copy of the tiny model folder (its files linked)."""
    vd = os.path.join(td, 'videos'); tiny = os.path.join(td, 'tiny-qwen3vl'); model = os.path.join(tmp, 'tiny-video')
    os.makedirs(model, exist_ok=True)
    for f in os.listdir(tiny):
        if not os.path.exists(os.path.join(model, f)): os.symlink(os.path.join(tiny, f), os.path.join(model, f))
    cfg = json.load(open(os.path.join(tiny, 'preprocessor_config.json')))
    cfg['size'] = {'shortest_edge': 4096, 'longest_edge': 16384}
    json.dump(cfg, open(os.path.join(model, 'video_preprocessor_config.json'), 'w'))
    cases = {c['name']: c for c in json.load(open(os.path.join(vd, 'cases.json')))['cases']}
    flags = {'shapes_fps2': [], 'gif_fps2': [], 'text_fps3_max3': ['--video-fps', '3', '--video-max-frames', '3']}
    failures = 0
    for name, extra in flags.items():
        c = cases[name]; clip = os.path.join(vd, c['clip']); px = os.path.join(tmp, name + '.vpixels.npy')
        lg, vf = os.path.join(tmp, name + '.vlogits.npy'), os.path.join(tmp, name + '.vfeatures.npy')
        cmd = [qvl, '-m', model, '--video', clip, '-p', 'Describe this video.', '--temp', '0', '-n', '8',
               '--ignore-eos', '--json', '--dump-pixels', px, '--dump-logits', lg, '--dump-vision', vf] + extra
        rc, out, err = run(cmd)
        try: j = json.loads(out)
        except Exception: j = {}
        bad = [f'exit {rc}: {err.strip()[-120:]}'] if rc != 0 else []
        if j.get('prompt_tokens') != c['input_ids']: bad.append('prompt_tokens differ')
        ref = np.fromfile(os.path.join(vd, name + '.pixels.f32'), np.float32)
        if not os.path.exists(px) or not np.array_equal(np.load(px).ravel(), ref): bad.append('pixel_values_videos differ')
        gold = os.path.join(vd, name + '.model.safetensors')
        if os.path.exists(gold):
            g = read_safetensors(gold)
            if j.get('tokens') != g['generated_ids'].tolist(): bad.append(f"tokens {j.get('tokens')} != {g['generated_ids'].tolist()}")
            e = rel_err(np.load(lg), g['logits_last']) if os.path.exists(lg) else float('inf')
            if not e <= 2e-5: bad.append(f'logits err {e:.2e}')
            f = np.load(vf) if os.path.exists(vf) else np.zeros(0)
            if f.shape != g['video_embeds'].shape: bad.append(f"--dump-vision shape {f.shape} != {g['video_embeds'].shape}")
            elif not rel_err(f, g['video_embeds']) <= 2e-5: bad.append(f"--dump-vision err {rel_err(f, g['video_embeds']):.2e}")
        rc, out, err = run(cmd[:cmd.index('--json') + 1] + extra + ['--dry-run'])
        try: dry = json.loads(out)
        except Exception: dry = {}
        if rc != 0 or dry.get('prompt_tokens') != len(c['input_ids']): bad.append(f'--dry-run: exit {rc}, {dry.get("prompt_tokens")} tokens')
        print(f"video {name}: " + ('ok' if not bad else 'FAIL ' + '; '.join(bad)))
        failures += bool(bad)
    cut = os.path.join(tmp, 'cut.mp4')
    with open(os.path.join(vd, 'shapes_100x62_12fps.mp4'), 'rb') as f: data = f.read()
    with open(cut, 'wb') as f: f.write(data[:len(data) // 3])
    rc, out, err = run([qvl, '-m', model, '--video', cut, '-p', 'x', '-n', '1'])
    errors = [l for l in err.splitlines() if l.startswith('qvl-run: error: ')]
    ok = rc == 4 and len(errors) == 1 and 'cut.mp4' in errors[0]
    print('video damaged clip: ' + ('ok' if ok else f'FAIL exit {rc}: {err.strip()[-160:]}'))
    return failures + (not ok)

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(); ap.add_argument('qvl'); ap.add_argument('--testdata', default=os.path.join(here, '..', 'testdata'))
    # A short run (the sanitizer phase): only every N-th tokenizer case; every golden case still runs.
    ap.add_argument('--tokenizer-every', type=int, default=1)
    a = ap.parse_args(); td = os.path.abspath(a.testdata); tmp = tempfile.mkdtemp()
    idx = json.load(open(os.path.join(td, 'golden', 'index.json')))
    model = os.path.normpath(os.path.join(td, 'golden', idx['model_dir']))
    failures = 0
    for case in sorted(glob.glob(os.path.join(td, 'golden', '*', 'case.json'))):
        name = os.path.basename(os.path.dirname(case))
        g = read_safetensors(os.path.join(os.path.dirname(case), 'golden.safetensors'))
        lg, px = os.path.join(tmp, name + '.logits.npy'), os.path.join(tmp, name + '.pixels.npy')
        cmd = [a.qvl, '-m', model, '--messages', case, '--temp', '0', '-n', '16', '--ignore-eos', '--json', '--dump-logits', lg]
        if 'pixel_values' in g: cmd += ['--dump-pixels', px]
        rc, out, err = run(cmd)
        try: j = json.loads(out)
        except Exception: j = {}
        bad = []
        if rc != 0: bad.append(f'exit {rc}: {err.strip()[-120:]}')
        if j.get('prompt_tokens') != g['input_ids'].tolist(): bad.append('prompt_tokens differ')
        if j.get('tokens') != g['generated_ids'].tolist(): bad.append(f"tokens {j.get('tokens')} != {g['generated_ids'].tolist()}")
        e = rel_err(np.load(lg), g['logits_last']) if os.path.exists(lg) else float('inf')
        if not (e <= 2e-5 or (e <= 5e-2 and j.get('tokens') == g['generated_ids'].tolist())): bad.append(f'logits err {e:.2e}')
        if 'pixel_values' in g:
            n0 = int(np.prod(g['image_grid_thw'][0]))
            pe = rel_err(np.load(px), g['pixel_values'][:n0]) if os.path.exists(px) else float('inf')
            if pe != 0.0: bad.append(f'pixel_values err {pe:.2e}')
        print(f"{name}: " + ('ok' if not bad else 'FAIL ' + '; '.join(bad)) + f"  (logits err {e:.1e})")
        failures += bool(bad)
    ok = total = 0
    for i, line in enumerate(open(os.path.join(td, 'tokenizer', 'cases.jsonl'), encoding='utf-8')):
        if i % a.tokenizer_every: continue
        c = json.loads(line); f = os.path.join(tmp, 'prompt.txt')
        with open(f, 'w', encoding='utf-8', newline='') as fh: fh.write(c['text'])
        rc, out, err = run([a.qvl, '-m', model, '--raw', '--tokenize', '--json', '-f', f])
        try: ids = json.loads(out)['prompt_tokens']
        except Exception: ids = None
        total += 1; ok += ids == c['ids']
        if ids != c['ids'] and total - ok <= 5: print(f"tokenizer miss: {c['text'][:50]!r}: {ids} != {c['ids']}")
    print(f"tokenizer: {ok}/{total} exact")
    failures += ok != total
    failures += video_cases(a.qvl, td, tmp)
    print('conformance: PASS' if failures == 0 else f'conformance: {failures} FAIL')
    return 0 if failures == 0 else 1

if __name__ == '__main__':
    sys.exit(main())
