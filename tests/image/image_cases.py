#!/usr/bin/env python3
"""image_cases: engine/image's decoder (image_dump) on real files made here with Pillow.

  image_cases.py IMAGE_DUMP WORKDIR [--stb STB_DUMP]

1. Pixels: JPEG (4:4:4, 4:2:0, progressive, gray, CMYK), PNG (RGB, RGBA, gray, gray+alpha,
   palette, palette+tRNS, 1-bit, 16-bit gray/RGB/RGBA), WebP (lossy, lossless, alpha), GIF
   (first frame, transparency, animation), binary PPM against llama.cpp's loader (stb_image, when
   --stb is given) and against Pillow (alpha dropped, as stb does with 3 channels). Lossless
   formats must match exactly; JPEG within JPEG_MAX_DIFF (IDCTs and upsamplers differ).
2. EXIF orientation 1..8 (JPEG APP1 and PNG eXIf) against Pillow's ImageOps.exif_transpose.
3. Hostile files: each must fail with exit 1 and one stderr line "image: ..." naming it.
4. image_dump --mangle over every file: all truncations and random byte changes.
Prints a table (format, size, max abs diff vs stb / Pillow)."""
import io
import os
import struct
import subprocess
import types
import sys
import zlib

import numpy as np
from PIL import Image, ImageOps

JPEG_MAX_DIFF = 4   # per channel; measured 3 vs stb_image (libjpeg-turbo 2.1.5), 0 vs Pillow
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def picture(w, h, seed):
    """A smooth gradient with a few hard edges and mild noise (deterministic)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1))
    g = (y * 255 // max(h - 1, 1))
    b = ((x + y) * 3) % 256
    img = np.stack([r, g, b], -1).astype(np.int32)
    img[h // 3:h // 2, w // 4:w // 2] = [250, 20, 30]
    img += rng.integers(-6, 7, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def png_chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)


def png_raw(w, h, bit_depth, color_type, rows_bytes, extra=b""):
    """A PNG written by hand (Pillow cannot write 16-bit RGB/RGBA): filter 0 on every row."""
    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 0)
    raw = b"".join(b"\0" + r for r in rows_bytes)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + extra + png_chunk(b"IDAT", zlib.compress(raw))
            + png_chunk(b"IEND", b""))


def save(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, fmt, **kw)
    return b.getvalue()


def pillow_rgb(data):
    im = Image.open(io.BytesIO(data))
    im.seek(0)
    if im.mode in ("I;16", "I;16B", "I"):   # 16-bit gray: high byte, as stb and libpng's strip_16
        a = (np.asarray(im).astype(np.uint32) >> 8).astype(np.uint8)
        return np.stack([a, a, a], -1)
    if im.mode == "P" and "transparency" in im.info:
        im = im.convert("RGBA")
    return np.asarray(im.convert("RGB"))


def main():
    dump, work = sys.argv[1], sys.argv[2]
    stb = sys.argv[sys.argv.index("--stb") + 1] if "--stb" in sys.argv else None
    os.makedirs(work, exist_ok=True)

    # One image_dump --serve process for every file (under Wine one start, not one per file); its
    # stderr goes to a file that must stay empty: a library writing there is a failure.
    err_path = os.path.join(work, "serve.stderr")
    err_file = open(err_path, "w+b")
    server = subprocess.Popen([dump, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_file,
                              text=True)

    def run(path, *extra):
        out = os.path.join(work, "out.rgb")
        lim = dict(zip(extra[0::2], extra[1::2]))
        server.stdin.write(f"{path}\t{out}\t{lim.get('--max-bytes', 0)}\t{lim.get('--max-pixels', 0)}\n")
        server.stdin.flush()
        reply = server.stdout.readline().rstrip("\r\n")
        err_file.seek(0)
        stray = err_file.read().decode(errors="replace")
        err_file.seek(0)
        err_file.truncate()
        if not reply:
            sys.exit(f"image_dump --serve ended: {stray[-2000:]}")
        if reply.startswith("ok "):
            w, h = map(int, reply.split()[1:3])
            check(not stray, f"{path}: decoded, but stderr got {stray!r}")
            res = types.SimpleNamespace(returncode=0, stderr=stray)
            return np.fromfile(out, np.uint8).reshape(h, w, 3), res
        msg = reply[len("error "):] if reply.startswith("error ") else reply
        return None, types.SimpleNamespace(returncode=1, stderr=msg + "\n" + stray)

    def run_stb(path):
        out = os.path.join(work, "stb.rgb")
        p = subprocess.run([stb, path, out], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            return None
        w, h = map(int, p.stdout.split())
        return np.fromfile(out, np.uint8).reshape(h, w, 3)

    pic = picture(67, 45, 1)
    big = picture(320, 241, 2)
    rgb = Image.fromarray(pic)
    rgba = Image.fromarray(np.dstack([pic, (np.arange(67 * 45) % 256).reshape(45, 67).astype(np.uint8)]))
    gray = rgb.convert("L")
    pal = rgb.quantize(64)
    pal_t = pal.copy()
    pal_t.info["transparency"] = 3
    p16 = (pic.astype(np.uint16) * 257 + 77)
    a16 = (np.arange(67 * 45, dtype=np.uint16).reshape(45, 67, 1) * 31)
    frames = [Image.fromarray(picture(40, 30, s)).quantize(32) for s in (3, 4)]
    gif_t = Image.fromarray(picture(40, 30, 5)).quantize(32)

    cases = {  # name: (bytes, exact?, compare with Pillow?)
        "jpeg 4:4:4 q90": (save(rgb, "JPEG", quality=90, subsampling=0), False, True),
        "jpeg 4:2:0 q75": (save(Image.fromarray(big), "JPEG", quality=75, subsampling=2), False, True),
        "jpeg progressive": (save(Image.fromarray(big), "JPEG", quality=85, progressive=True), False, True),
        "jpeg gray": (save(gray, "JPEG", quality=90), False, True),
        "jpeg cmyk": (save(rgb.convert("CMYK"), "JPEG", quality=95), False, False),
        "png rgb8": (save(rgb, "PNG"), True, True),
        "png rgba8": (save(rgba, "PNG"), True, True),
        "png gray8": (save(gray, "PNG"), True, True),
        "png gray+alpha": (save(Image.merge("LA", [gray, gray]), "PNG"), True, True),
        "png palette": (save(pal, "PNG"), True, True),
        "png palette+tRNS": (save(pal_t, "PNG", transparency=3), True, False),
        "png 1-bit": (save(gray.convert("1"), "PNG"), True, True),
        "png gray16": (save(Image.fromarray(p16[:, :, 0]).convert("I;16"), "PNG"), True, True),
        "png rgb16": (png_raw(67, 45, 16, 2, [r.astype(">u2").tobytes() for r in p16]), True, False),
        "png rgba16": (png_raw(67, 45, 16, 6, [np.dstack([p16, a16]).astype(">u2")[i].tobytes() for i in range(45)]),
                       True, False),
        "webp lossy": (save(Image.fromarray(big), "WEBP", quality=80), True, True),
        "webp lossless": (save(rgb, "WEBP", lossless=True), True, True),
        "webp alpha": (save(rgba, "WEBP", quality=90), True, True),
        "gif": (save(frames[0], "GIF"), True, True),
        "gif animated": (save(frames[0], "GIF", save_all=True, append_images=[frames[1]], duration=100), True, True),
        "gif transparent": (save(gif_t, "GIF", transparency=5), True, False),
        "ppm (P6)": (save(rgb, "PPM"), True, True),
    }
    files = []
    print(f"{'case':20} {'size':>9} {'bytes':>7} {'vs stb_image':>13} {'vs Pillow':>10}")
    for name, (data, exact, vs_pillow) in cases.items():
        path = os.path.join(work, name.replace(" ", "_").replace(":", "").replace("+", "_") + ".img")
        with open(path, "wb") as f:
            f.write(data)
        files.append(path)
        ours, p = run(path)
        if ours is None:
            check(False, f"{name}: not decoded: {p.stderr.strip()}")
            continue
        cols = []
        ref = run_stb(path) if stb and not name.startswith("webp") else None
        for kind, r in (("stb", ref), ("pillow", pillow_rgb(data) if vs_pillow else None)):
            if r is None:
                cols.append("-")
                continue
            check(r.shape == ours.shape, f"{name}: shape {ours.shape} vs {kind} {r.shape}")
            if r.shape != ours.shape:
                cols.append("shape!")
                continue
            d = int(np.abs(r.astype(int) - ours.astype(int)).max())
            cols.append(str(d))
            limit = 0 if exact else JPEG_MAX_DIFF
            check(d <= limit, f"{name}: max abs diff {d} vs {kind} (limit {limit})")
        if stb and not name.startswith("webp") and ref is None:
            check(False, f"{name}: stb_image failed on it")
        print(f"{name:20} {ours.shape[1]:>4}x{ours.shape[0]:<4} {len(data):>7} {cols[0]:>13} {cols[1]:>10}")

    # EXIF orientation: every value, in a JPEG (APP1) and a PNG (eXIf), against Pillow.
    asym = Image.fromarray(picture(23, 14, 9))
    for o in range(1, 9):
        ex = Image.Exif()
        ex[0x0112] = o
        for fmt, kw, limit in (("JPEG", {"quality": 95, "subsampling": 0}, JPEG_MAX_DIFF), ("PNG", {}, 0)):
            data = save(asym, fmt, exif=ex.tobytes(), **kw)
            path = os.path.join(work, f"exif{o}.{fmt.lower()}")
            with open(path, "wb") as f:
                f.write(data)
            files.append(path)
            ours, p = run(path)
            want = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
            if ours is None or ours.shape != want.shape:
                check(False, f"exif {o} {fmt}: {None if ours is None else ours.shape} vs Pillow {want.shape}")
                continue
            d = int(np.abs(want.astype(int) - ours.astype(int)).max())
            check(d <= limit, f"exif {o} {fmt}: max abs diff {d} vs Pillow")
    print("exif orientation 1..8 (JPEG APP1, PNG eXIf) vs Pillow's exif_transpose: checked")

    # Hostile files: (name, bytes, expected words in the one-line error, extra args)
    jpg = cases["jpeg 4:4:4 q90"][0]
    png = cases["png rgb8"][0]
    gif = cases["gif"][0]
    webp_ll = cases["webp lossless"][0]

    def patch_jpeg_size(d, w, h):
        i = 2
        while i < len(d):
            marker, seglen = d[i + 1], struct.unpack(">H", d[i + 2:i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                return d[:i + 5] + struct.pack(">HH", h, w) + d[i + 9:]
            i += 2 + seglen
        raise RuntimeError("no SOF")

    def patch_jpeg_precision(d, bits):
        i = 2
        while i < len(d):
            marker, seglen = d[i + 1], struct.unpack(">H", d[i + 2:i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                return d[:i + 4] + bytes([bits]) + d[i + 5:]
            i += 2 + seglen
        raise RuntimeError("no SOF")

    def patch_png_ihdr(d, w, h):
        ihdr = struct.pack(">II", w, h) + d[24:29]
        return d[:8] + png_chunk(b"IHDR", ihdr) + d[33:]

    vp8l = webp_ll.index(b"VP8L") + 8   # signature byte, then 14-bit width-1 and height-1
    huge_webp = webp_ll[:vp8l + 1] + bytes([0xff, 0xff, 0xff, 0xff & 0x0f | (webp_ll[vp8l + 4] & 0xf0)]) + webp_ll[vp8l + 5:]
    gif_noframe = gif[:13 + 3 * (2 << (gif[10] & 7))] + b"\x3b"
    bad_crc = bytearray(png)
    bad_crc[30] ^= 0x55   # IHDR's CRC
    bad_idat = bytearray(png)
    bad_idat[60] ^= 0x55   # inside IDAT's compressed data
    anim_webp = save(frames[0].convert("RGB"), "WEBP", save_all=True, append_images=[frames[1].convert("RGB")])
    hostile = [
        ("empty", b"", "empty", []),
        ("wrong magic", b"hello, this is not an image at all", "unknown format", []),
        ("jpeg bomb 65000x65000", patch_jpeg_size(jpg, 65000, 65000), "over the limit", []),
        ("png bomb 100000x100000", patch_png_ihdr(png, 100000, 100000), "over the limit", []),
        ("jpeg 12-bit samples", patch_jpeg_precision(jpg, 12), "precision", []),
        ("png zero width", patch_png_ihdr(png, 0, 45), "PNG", []),
        ("gif bomb 65535x65535", gif[:6] + struct.pack("<HH", 65535, 65535) + gif[10:], "over the limit", []),
        ("webp bomb 16384x16384", huge_webp, "over the limit", []),
        ("gif with 0 frames", gif_noframe, "no image frame", []),
        ("jpeg truncated", jpg[:len(jpg) // 2], "JPEG", []),
        ("png truncated", png[:len(png) // 2], "PNG", []),
        ("gif truncated", gif[:len(gif) // 2], "GIF", []),
        ("webp truncated", webp_ll[:len(webp_ll) // 2], "WebP", []),
        ("png bad CRC", bytes(bad_crc), "CRC", []),
        ("png corrupt IDAT", bytes(bad_idat), "PNG", []),
        ("webp animated", anim_webp, "animated", []),
        ("ppm truncated", cases["ppm (P6)"][0][:-10], "truncated PPM", []),
        ("ppm 16-bit", b"P6 2 1 65535\n" + b"\0" * 12, "maxval", []),
        ("over --max-bytes", png, "over the limit of 100 bytes", ["--max-bytes", "100"]),
        ("over --max-pixels", png, "over the limit of 1000 pixels", ["--max-pixels", "1000"]),
    ]
    print("hostile set:")
    for name, data, words, extra in hostile:
        path = os.path.join(work, "hostile_" + name.replace(" ", "_") + ".img")
        with open(path, "wb") as f:
            f.write(data)
        if name not in ("empty",):
            files.append(path)
        ours, p = run(path, *extra)
        lines = p.stderr.splitlines()
        ok = ours is None and p.returncode == 1 and len(lines) == 1 and lines[0].startswith("image: ") \
            and words in lines[0]
        check(ok, f"hostile {name}: rc {p.returncode}, stderr {p.stderr!r} (want one line with '{words}')")
        print(f"  {name:24} -> {lines[0] if lines else '(decoded!)'}")

    server.stdin.close()
    server.wait(timeout=60)
    err_file.close()
    p = subprocess.run([dump, "--mangle", *files], capture_output=True, text=True, timeout=500)
    check(p.returncode == 0, f"mangle: rc {p.returncode}: {p.stderr[-2000:]}")
    n_files = len(p.stdout.splitlines())
    print(f"truncations + random byte changes of {n_files} files: " + ("ok" if p.returncode == 0 else "FAILED"))

    print(f"{len(failures)} failed" if failures else "all image cases passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
