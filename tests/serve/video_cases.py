"""Videos through qvl-serve (issue 50, docs/serve.md): a video_url data URI answers as qvl-run
--messages with the same video part, the same clip in another conversation comes from the
image-feature cache (one hit per frame pair in /metrics) while another clip does not, and a
damaged or mistyped video is a 400 naming the part and the problem. Run by api_test.py."""
import base64
import os


def run(client, check, expect_error, server_url, su, args):
    videos = os.path.join(os.path.dirname(os.path.abspath(args.images)), "videos")
    clip = os.path.join(videos, "shapes_100x62_12fps.mp4")
    gif = os.path.join(videos, "anim_50x38_5fps.gif")

    def ask(conv, n=6):
        return client.chat.completions.create(model="tiny", messages=su.to_openai(conv),
                                              max_tokens=n, temperature=0)

    conv = [("user", [("video", clip), "What happens in this clip?"])]
    ref = su.qvl_run_answer(args.run, args.model, conv, 6)
    before = su.metrics(server_url).get("qvl_image_cache_hits_total", 0)
    r = ask(conv)
    check(r.choices[0].message.content == ref["text"],
          f"video answer {r.choices[0].message.content!r} != qvl-run {ref['text']!r}")
    check(r.usage.prompt_tokens == len(ref["prompt_tokens"]), "video prompt tokens = qvl-run's")
    check(ref["videos"][0]["frames"] == 5 and ref["videos"][0]["tokens"] == 84, "qvl-run's video")
    # Another conversation (a system turn first: the slot's prefix ends before the video), the
    # same clip and sampling: its 3 frame pairs come from the cache.
    ask([("system", ["Be brief."])] + conv)
    after = su.metrics(server_url).get("qvl_image_cache_hits_total", 0)
    check(after - before == 3, f"same clip again: {after - before} cache hits, expected 3")
    ask([("system", ["Be brief."]), ("user", [("video", gif), "And this one?"])])
    check(su.metrics(server_url).get("qvl_image_cache_hits_total", 0) == after,
          "another clip: no cache hit")

    def video_part(url):
        return [{"role": "user", "content": [{"type": "video_url", "video_url": {"url": url}},
                                             {"type": "text", "text": "x"}]}]
    with open(clip, "rb") as f:
        cut = base64.b64encode(f.read()[:1500]).decode()
    expect_error(400, lambda: client.chat.completions.create(
        model="m", messages=video_part("data:video/mp4;base64," + cut)), "messages[0].content[0]")
    expect_error(400, lambda: client.chat.completions.create(
        model="m", messages=video_part("data:video/mp4;base64,aGVsbG8gd29ybGQ=")),
        "messages[0].content[0]: not an mp4")
    expect_error(400, lambda: client.chat.completions.create(
        model="m", messages=video_part("data:image/png;base64,aGVsbG8=")), "is not an MP4")
    expect_error(400, lambda: client.chat.completions.create(
        model="m", messages=video_part("https://example.com/a.mp4")), "--allowed-media-hosts")
