"""Exact YUV 4:2:0 → BGR conversion: bit-identical to the BGR frames ``cv2.VideoCapture`` returns on x86-64.

OpenCV (like PyAV and decord) converts a decoded ``yuv420p`` frame to ``bgr24`` through FFmpeg's swscale,
and for this unscaled case swscale runs its SSSE3 ``yuv420_bgr24`` routine (libswscale/x86/yuv_2_rgb.asm):
16-bit fixed point, ``pmulhw`` (keep the high 16 bits of a 16×16 product, i.e. floor(a·b / 2^16)), chroma
shared by each 2×2 block (nearest, no interpolation). Per pixel, with Y, U, V the decoded 8-bit samples::

    y' = floor((8·Y − y_offset) · y_coef / 2^16)
    u  = 8·U − 1024,  v = 8·V − 1024
    B = clip(y' + floor(u · ub / 2^16))
    G = clip(y' + floor(u · ug / 2^16) + floor(v · vg / 2^16))
    R = clip(y' + floor(v · vr / 2^16))          clip to [0, 255]

The five coefficients come from swscale's ``ff_yuv2rgb_coeffs`` row for the stream's matrix and range,
rounded exactly as ``ff_yuv2rgb_c_init_tables`` does (:func:`swscale_coefficients`). The textbook float
formula differs from these frames by ±1 on many pixels; swscale's portable C table path differs too — so
parity holds where OpenCV's FFmpeg runs the SSSE3 routine (any x86-64 CPU since 2006; the tests compare
against this host's ``cv2.VideoCapture`` on all 2^24 (Y, U, V) triples). On other CPUs (aarch64 NEON)
OpenCV's own frames follow different arithmetic: `prism-fast doctor` checks the host.

No saturation can occur for 8-bit inputs (|y'| ≤ 296, each chroma term ≤ 271), so int32 arithmetic is exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._checks import check_tensor

# ff_yuv2rgb_coeffs (libswscale/yuv2rgb.c): (crv, cbu, cgu, cgv) in 16.16 fixed point, per matrix.
SWS_MATRICES = {
    "bt601": (104597, 132201, 25675, 53279),   # unspecified / BT.470BG / SMPTE 170M: swscale's default
    "bt709": (117489, 138438, 13975, 34925),
}


@dataclass(frozen=True)
class YuvCoefficients:
    """Integer coefficients of swscale's 16-bit YUV → RGB path (see the module docstring)."""

    y_coef: int
    y_offset: int
    vr: int
    ub: int
    vg: int
    ug: int


def _round_to_int16(f: int) -> int:
    """swscale's ``roundToInt16``: (f + 2^15) >> 16, saturated to int16."""
    r = (f + (1 << 15)) >> 16
    return max(-0x7FFF if r >= -0x7FFF else -0x8000, min(0x7FFF, r))


def _trunc_div(a: int, b: int) -> int:
    """C integer division (truncates towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def swscale_coefficients(matrix: str = "bt601", full_range: bool = False) -> YuvCoefficients:
    """The coefficients swscale derives for ``matrix`` (``bt601`` | ``bt709``) and the range, with its default
    brightness 0, contrast 1 and saturation 1 (what OpenCV, PyAV and decord leave them at)."""
    if matrix not in SWS_MATRICES:
        raise ValueError(f"matrix: expected one of {tuple(SWS_MATRICES)}, got {matrix!r}")
    crv, cbu, cgu, cgv = SWS_MATRICES[matrix]
    cgu, cgv = -cgu, -cgv
    cy, oy = 1 << 16, 0
    if full_range:
        crv, cbu, cgu, cgv = (_trunc_div(c * 224, 255) for c in (crv, cbu, cgu, cgv))
    else:
        cy, oy = (cy * 255) // 219, 16 << 16
    # contrast = saturation = 1 << 16: (c · 2^16 · 2^16) >> 32 leaves every coefficient unchanged
    return YuvCoefficients(
        y_coef=_round_to_int16(cy * (1 << 13)), y_offset=_round_to_int16(oy * (1 << 3)),
        vr=_round_to_int16(crv * (1 << 13)), ub=_round_to_int16(cbu * (1 << 13)),
        vg=_round_to_int16(cgv * (1 << 13)), ug=_round_to_int16(cgu * (1 << 13)))


BT601_LIMITED = swscale_coefficients("bt601", False)


def _mulhi(x: torch.Tensor, coef: int) -> torch.Tensor:
    """``pmulhw``: floor(x · coef / 2^16) on int32 (arithmetic shift; exact, |x · coef| < 2^31)."""
    return (x * coef).bitwise_right_shift_(16)


def _upsample2(c: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """``(T, h2, w2)`` → ``(T, H, W)``: every chroma sample repeated over its 2×2 block (a view when H, W are
    even, else cropped)."""
    t, h2, w2 = c.shape
    full = c[:, :, None, :, None].expand(t, h2, 2, w2, 2).reshape(t, 2 * h2, 2 * w2)
    return full[:, :height, :width]


def yuv420_to_bgr(y: torch.Tensor, u: torch.Tensor, v: torch.Tensor,
                  coeffs: YuvCoefficients = BT601_LIMITED) -> torch.Tensor:
    """Planes ``(T, H, W)``, ``(T, ⌈H/2⌉, ⌈W/2⌉)`` × 2, all uint8 → BGR ``(T, H, W, 3) uint8``.

    Bit-identical to OpenCV's frames for the matching ``coeffs`` (module docstring). Planes may be strided
    views (e.g. the halves of an NV12 buffer); the output is contiguous on the planes' device.
    """
    check_tensor(y, "y", ndim=3, dtype=torch.uint8, layout="(T, H, W) uint8")
    t, h, w = y.shape
    chroma = (t, (h + 1) // 2, (w + 1) // 2)
    for name, c in (("u", u), ("v", v)):
        check_tensor(c, name, ndim=3, dtype=torch.uint8, layout="(T, ⌈H/2⌉, ⌈W/2⌉) uint8")
        if tuple(c.shape) != chroma:
            raise ValueError(f"{name}: expected shape {chroma} for y of shape {tuple(y.shape)}, got {tuple(c.shape)}")
        if c.device != y.device:
            raise ValueError(f"{name}: expected device {y.device} (as y), got {c.device}")
    luma = _mulhi(y.to(torch.int32).mul_(8).sub_(coeffs.y_offset), coeffs.y_coef)
    cu = u.to(torch.int32).mul_(8).sub_(1024)
    cv = v.to(torch.int32).mul_(8).sub_(1024)
    out = torch.empty((t, h, w, 3), dtype=torch.uint8, device=y.device)
    terms = (_mulhi(cu, coeffs.ub), _mulhi(cu, coeffs.ug).add_(_mulhi(cv, coeffs.vg)), _mulhi(cv, coeffs.vr))
    for channel, term in enumerate(terms):   # B, G, R: one full-size int32 temporary at a time
        out[..., channel] = (luma + _upsample2(term, h, w)).clamp_(0, 255)
    return out


def nv12_to_bgr(y: torch.Tensor, uv: torch.Tensor, coeffs: YuvCoefficients = BT601_LIMITED) -> torch.Tensor:
    """NV12 planes ``(T, H, W)`` and interleaved chroma ``(T, ⌈H/2⌉, ⌈W/2⌉, 2)`` (U, V), uint8 → BGR
    ``(T, H, W, 3) uint8``; the same arithmetic as :func:`yuv420_to_bgr` (NV12 is only another layout)."""
    check_tensor(uv, "uv", ndim=4, dtype=torch.uint8, last_dim=2, layout="(T, ⌈H/2⌉, ⌈W/2⌉, 2) uint8")
    return yuv420_to_bgr(y, uv[..., 0], uv[..., 1], coeffs)
