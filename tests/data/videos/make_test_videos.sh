#!/usr/bin/env bash
# Makes the small synthetic clips of the video tests with Debian's ffmpeg CLI (apt: ffmpeg).
# Each clip is a few KB: moving shapes and a frame counter (testsrc/testsrc2 draw both), odd
# sizes and frame rates, H.264 and HEVC in MP4 (with B-frames and short GOPs so that sampling
# seeks), VP9 and VP8 in WebM, AV1 in MP4, an animated GIF, and a BT.709-tagged clip (the colour
# matrix is read from the stream). The bad-video suite's malformed files are written by tests/io/video_test.cpp itself.
set -euo pipefail
cd "$(dirname "$0")"
ff=(ffmpeg -hide_banner -loglevel error -y)
x264=(-c:v libx264 -pix_fmt yuv420p -preset medium -bf 2 -g 8 -keyint_min 8 -sc_threshold 0 -flags +bitexact -fflags +bitexact)
"${ff[@]}" -f lavfi -i testsrc2=size=100x62:rate=12:duration=2.5 "${x264[@]}" shapes_100x62_12fps.mp4
"${ff[@]}" -f lavfi -i testsrc=size=90x70:rate=7:duration=3 -c:v libvpx-vp9 -pix_fmt yuv420p \
    -b:v 200k -g 10 -flags +bitexact -fflags +bitexact text_90x70_7fps.webm
"${ff[@]}" -f lavfi -i testsrc=size=50x38:rate=5:duration=2 -flags +bitexact -fflags +bitexact \
    anim_50x38_5fps.gif
"${ff[@]}" -f lavfi -i testsrc2=size=64x48:rate=30000/1001:duration=1.2 "${x264[@]}" \
    -colorspace bt709 -color_primaries bt709 -color_trc bt709 bt709_64x48_2997fps.mp4
"${ff[@]}" -f lavfi -i testsrc2=size=24x72:rate=3:duration=4 "${x264[@]}" narrow_24x72_3fps.mp4
# HEVC in MP4 (B-frames, a key frame every 8), VP8 in WebM, AV1 in MP4 (decoded by libdav1d on
# both sides: PyAV's wheel and Debian's libavcodec prefer it to the native av1 decoder).
"${ff[@]}" -f lavfi -i testsrc2=size=66x46:rate=10:duration=2 -c:v libx265 -pix_fmt yuv420p \
    -preset medium -x265-params log-level=error:bframes=2:keyint=8:min-keyint=8:scenecut=0 \
    -tag:v hvc1 -flags +bitexact -fflags +bitexact hevc_66x46_10fps.mp4
"${ff[@]}" -f lavfi -i testsrc=size=58x42:rate=8:duration=2 -c:v libvpx -pix_fmt yuv420p \
    -b:v 150k -g 6 -flags +bitexact -fflags +bitexact vp8_58x42_8fps.webm
"${ff[@]}" -f lavfi -i testsrc2=size=64x36:rate=6:duration=2 -c:v libaom-av1 -pix_fmt yuv420p \
    -crf 40 -cpu-used 8 -g 6 -flags +bitexact -fflags +bitexact av1_64x36_6fps.mp4
# Not a video codec the decoder accepts: MPEG-2 video in an MP4.
"${ff[@]}" -f lavfi -i testsrc=size=32x32:rate=5:duration=1 -c:v mpeg2video -flags +bitexact \
    -fflags +bitexact mpeg2_32x32.mp4
# Audio only.
"${ff[@]}" -f lavfi -i sine=duration=0.5 -c:a aac -flags +bitexact -fflags +bitexact audio_only.mp4
# Over the default 4096x4096 pixel limit: one black 4160x4160 frame (a few KB).
"${ff[@]}" -f lavfi -i color=size=4160x4160:rate=1:duration=1 -c:v libx264 -pix_fmt yuv420p \
    -flags +bitexact -fflags +bitexact huge_4160x4160.mp4
