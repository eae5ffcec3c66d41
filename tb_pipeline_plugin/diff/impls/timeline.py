"""`diff/timeline`: both runs' events of one aligned piece, matched."""
from __future__ import annotations

from ..timeline import TimelineQuery, timeline_diff
from ..tree import recordings_note


def diff_timeline_impl(pair, q: TimelineQuery = TimelineQuery()) -> dict:
    """Both runs' events of one aligned piece, matched (diff/timeline.py);
    device streams drawn first when the pair's basis is the device's clock."""
    bound = pair.basis.device_bound
    return {**timeline_diff(pair.b, pair.e, q.path, q.from_us, q.to_us, q.width_px, q.max_events, q.find,
                            devices_first=bound),
            "device_bound": bound, "baseline_recording": pair.b.shown_recording,
            "experimental_recording": pair.e.shown_recording, "recordings_note": recordings_note(pair.b, pair.e)}
