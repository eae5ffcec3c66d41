/**
 * A "trace viewer" link: opens a trace in torch-tb-profiler's trace viewer (our
 * profiler page, in a new tab). Rendered only when TensorBoard lists
 * torch-tb-profiler; nothing at all otherwise.
 */
import { useEffect, useState } from "preact/hooks";
import { PLUGINS_LISTING_URL, profilerListed, profilerHref, type TraceSel } from "../model/profilerLink";

// One listing request per page: plugins are fixed for TensorBoard's lifetime.
let listed: Promise<boolean> | null = null;

function profilerPresent(): Promise<boolean> {
  if (!listed)
    listed = fetch(PLUGINS_LISTING_URL)
      .then((r) => (r.ok ? r.json() : null))
      .then(profilerListed, () => false);
  return listed;
}

export function useProfilerPresent(): boolean {
  const [present, setPresent] = useState(false);
  useEffect(() => {
    let live = true;
    void profilerPresent().then((p) => live && setPresent(p));
    return () => {
      live = false;
    };
  }, []);
  return present;
}

interface Props {
  sel: TraceSel;
  /** What the link is for, in its tooltip ("baseline", an operator name). */
  what: string;
  /** A name to look for in the viewer (operator, kernel, module piece). */
  find?: string;
  label?: string;
}

export function ProfilerLink({ sel, what, find = "", label = "trace viewer" }: Props) {
  const present = useProfilerPresent();
  if (!present || !sel.run) return null;
  return (
    <a
      class="profiler-link"
      href={profilerHref(sel, find)}
      target="_blank"
      rel="noopener"
      data-profiler-run={sel.run}
      title={`Open the ${what} trace in torch-tb-profiler's trace viewer (new tab)`}
    >
      {label}
    </a>
  );
}

/** Baseline and experimental links side by side (a piece, a table row); `bare`: without the "trace viewer:" label (under a column header that says it). */
export function ProfilerPair(props: { baseline: TraceSel; experimental: TraceSel; find?: string; bare?: boolean }) {
  const { baseline, experimental, find = "", bare = false } = props;
  const present = useProfilerPresent();
  if (!present) return null;
  return (
    <span class="profiler-pair">
      {bare ? "" : "trace viewer: "}
      <ProfilerLink sel={baseline} what="baseline" find={find} label="B" />{" "}
      <ProfilerLink sel={experimental} what="experimental" find={find} label="E" />
    </span>
  );
}
