#!/usr/bin/env python3
"""images_api: images on every generation API of `anvil serve` (issue 32), against the text-only
tiny model: a well-formed image is a 400 saying the model does not support image input (on
/api/generate, /api/chat, /v1/chat/completions with image_url as object and as string,
/v1/responses input_image, /v1/messages and its count_tokens); malformed images are 400s that
name the field (bad base64, a non-string, http(s) URLs refused as Ollama refuses them, a data
URI of another type, Anthropic's url source and a wrong media_type); /api/show lists no "vision";
the server still answers text afterwards and exits cleanly.

  images_api.py ANVIL MODEL.gguf"""
import base64
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server, check, finish, post_json  # noqa: E402


def tiny_png():
    """A 2x1 RGB PNG (red, blue), written by hand."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)
    raw = b"\0" + bytes([255, 0, 0, 0, 0, 255])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def error_text(o):
    if not isinstance(o, dict):
        return ""
    e = o.get("error")
    if isinstance(e, dict):
        return e.get("message", "") + " param=" + str(e.get("param"))
    return str(e)


def main():
    anvil, model = sys.argv[1], sys.argv[2]
    b64 = base64.b64encode(tiny_png()).decode()
    uri = "data:image/png;base64," + b64
    user = lambda content: [{"role": "user", "content": content}]  # noqa: E731
    text_only = "does not support image input"
    cases = [  # (what, path, body, words in the error)
        ("generate images", "/api/generate", {"model": model, "prompt": "what is this?", "images": [b64]}, text_only),
        ("chat images", "/api/chat", {"model": model, "messages": [
            {"role": "user", "content": "first", "images": [b64]}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "and [img] this", "images": [b64, b64]}]}, text_only),
        ("v1 image_url object", "/v1/chat/completions", {"model": model, "messages": user(
            [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": uri}}])}, text_only),
        ("v1 image_url string", "/v1/chat/completions", {"model": model, "messages": user(
            [{"type": "image_url", "image_url": "data:;base64," + b64}])}, text_only),
        ("responses input_image", "/v1/responses", {"model": model, "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "what?"}, {"type": "input_image", "image_url": uri}]}]}, text_only),
        ("messages image block", "/v1/messages", {"model": model, "max_tokens": 4, "messages": user([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}},
            {"type": "text", "text": "what is this?"}])}, text_only),
        ("count_tokens image block", "/v1/messages/count_tokens", {"model": model, "messages": user([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}}])}, text_only),
        # malformed: a 400 naming the field, before the model is asked
        ("generate bad base64", "/api/generate", {"model": model, "prompt": "x", "images": ["not base64!"]},
         "images[0]"),
        ("generate image not a string", "/api/generate", {"model": model, "prompt": "x", "images": [5]}, "images[0]"),
        ("chat images not an array", "/api/chat", {"model": model, "messages": [
            {"role": "user", "content": "x", "images": "abc"}]}, "messages[0].images"),
        ("chat second image bad", "/api/chat", {"model": model, "messages": [
            {"role": "user", "content": "x", "images": [b64, "QQ=x"]}]}, "messages[0].images[1]"),
        ("v1 https URL", "/v1/chat/completions", {"model": model, "messages": user(
            [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}])},
         "image URLs are not supported"),
        ("v1 bmp data URI", "/v1/chat/completions", {"model": model, "messages": user(
            [{"type": "image_url", "image_url": {"url": "data:image/bmp;base64," + b64}}])}, "data URI"),
        ("v1 url not a string", "/v1/chat/completions", {"model": model, "messages": user(
            [{"type": "image_url", "image_url": {"url": 3}}])}, "messages[0].content[0].image_url.url"),
        ("responses http URL", "/v1/responses", {"model": model, "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": "http://example.com/a.jpg"}]}]}, "image URLs are not supported"),
        ("messages url source", "/v1/messages", {"model": model, "max_tokens": 4, "messages": user([
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}])}, "base64"),
        ("messages bmp media_type", "/v1/messages", {"model": model, "max_tokens": 4, "messages": user([
            {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": b64}}])}, "media_type"),
        ("messages bad base64", "/v1/messages", {"model": model, "max_tokens": 4, "messages": user([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "%%%"}}])}, "base64"),
    ]
    srv = Server(anvil)
    for what, path, body, words in cases:
        st, _, o, raw = post_json(srv, path, body)
        msg = error_text(o)
        check(st == 400 and words in msg, "%s: 400 with '%s' (%d %r)" % (what, words, st, raw[:220]))
    st, _, o, raw = post_json(srv, "/api/show", {"model": model})
    caps = o.get("capabilities", []) if isinstance(o, dict) else []
    check(st == 200 and "completion" in caps and "vision" not in caps, "show: no 'vision' capability (%r)" % caps)
    st, _, o, raw = post_json(srv, "/api/generate", {"model": model, "prompt": "hi", "stream": False,
                                                     "options": {"num_predict": 2}})
    check(st == 200 and o.get("done") is True, "text still answered after the image requests (%d)" % st)
    rc, _ = srv.stop()
    check(rc == 0, "server exits 0 (%s)" % rc)
    finish()


if __name__ == "__main__":
    main()
