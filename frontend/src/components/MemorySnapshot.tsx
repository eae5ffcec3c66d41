/** The Memory tab's CUDA memory snapshot part: the sentence, both runs' peaks, reserved and fragmentation,
 * both runs' allocated and reserved bytes over time, the bytes live at each peak by category, Python frame
 * or module, largest change first, and each run's largest segments. */
import { useState } from "preact/hooks";
import { formatBytes, formatPct } from "../model/format";
import { SNAPSHOT_BY, snapshotDevice, snapshotRows, type SnapshotBy, type SnapshotDiff } from "../model/memorySnapshot";
import { SegmentTable, SnapshotChart } from "./MemorySnapshotChart";
import { Message } from "./Message";

export function MemorySnapshot({ snapshot }: { snapshot: SnapshotDiff }) {
  const [by, setBy] = useState<SnapshotBy>("category");
  const d = snapshotDevice(snapshot);
  return (
    <section data-testid="memory-snapshot">
      <h3>
        CUDA memory snapshots{d ? ` (${d.device})` : ""}: {snapshot.baseline_file ?? "none"} vs{" "}
        {snapshot.experimental_file ?? "none"}
      </h3>
      {snapshot.sentence && <p class="explanation-sentence" data-testid="snapshot-sentence">{snapshot.sentence}</p>}
      {snapshot.messages.map((m) => (
        <Message kind="warn" title="A snapshot was not read">{m}</Message>
      ))}
      {d && (
        <>
          <table class="data-table" data-testid="snapshot-metrics">
            <thead>
              <tr><th>metric</th><th>baseline</th><th>experimental</th><th>Δ</th><th>Δ %</th></tr>
            </thead>
            <tbody>
              {d.metrics.map((m) => (
                <tr>
                  <td>{m.metric}</td>
                  <td class="num">{formatBytes(m.baseline_bytes)}</td>
                  <td class="num">{formatBytes(m.experimental_bytes)}</td>
                  <td class="num">{formatBytes(m.delta_bytes, true)}</td>
                  <td class="num">{formatPct(m.delta_pct)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <SnapshotChart d={d} />
          <div class="toolbar" role="group" aria-label="Live at the peak by">
            {SNAPSHOT_BY.map((b) => (
              <button type="button" aria-pressed={by === b.id} onClick={() => setBy(b.id)}>{b.label}</button>
            ))}
          </div>
          <table class="data-table" data-testid="snapshot-rows">
            <thead>
              <tr><th>live at the peak</th><th>detail</th><th>baseline</th><th>experimental</th><th>Δ</th><th>Δ %</th></tr>
            </thead>
            <tbody>
              {snapshotRows(d, by).map((r) => (
                <tr>
                  <td>{r.key}</td>
                  <td>{r.detail}</td>
                  <td class="num">{formatBytes(r.baseline_bytes)}</td>
                  <td class="num">{formatBytes(r.experimental_bytes)}</td>
                  <td class="num">{formatBytes(r.delta_bytes, true)}</td>
                  <td class="num">{formatPct(r.delta_pct)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <SegmentTable d={d} />
        </>
      )}
    </section>
  );
}
