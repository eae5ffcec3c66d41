"""`diff/timeline`: both runs' events of one aligned piece, matched."""
from __future__ import annotations

from ... import contract as C
from ..timeline import TimelineQuery, timeline_diff
from ..tree import recordings_note
from . import UNNAMED, named


def diff_timeline_impl(pair, q: TimelineQuery = TimelineQuery(), refs: dict | None = None) -> C.DiffTimelineResponse:
    """Both runs' events of one aligned piece, matched (diff/timeline.py);
    device streams drawn first when the pair's basis is the device's clock."""
    bound = pair.basis.device_bound
    return named(C.DiffTimelineResponse(
        baseline=UNNAMED, experimental=UNNAMED,
        **timeline_diff(pair.b, pair.e, q.path, q.from_us, q.to_us, q.width_px, q.max_events, q.find,
                        devices_first=bound),
        device_bound=bound, baseline_recording=pair.b.shown_recording,
        experimental_recording=pair.e.shown_recording, recordings_note=recordings_note(pair.b, pair.e)), refs)
