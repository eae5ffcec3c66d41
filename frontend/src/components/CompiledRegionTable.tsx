/** A compiled region's device time by kernel family, both runs (model/compiledRegion.ts). */
import type { DiffPiece } from "../api";
import { familyRows, regionTitle } from "../model/compiledRegion";
import { formatMs, formatSignedMs } from "../model/format";
import { DeltaText } from "./Delta";

export function CompiledRegionTable({ piece }: { piece: DiffPiece }) {
  const r = piece.compiled_region;
  if (!r) return null;
  const rows = familyRows(r);
  const other = r.side === "baseline" ? "experimental" : "baseline";
  return (
    <section class="compiled-region" data-testid="compiled-region" data-path={piece.path}>
      <h3 title={regionTitle(r)}>
        {r.module}: the {r.side} run's compiled graph against the {other} run's eager {r.eager_pieces.join(", ")}, kernels by family
      </h3>
      <table class="small">
        <thead>
          <tr>
            <th scope="col">Kernel family</th>
            <th scope="col">Baseline (ms)</th>
            <th scope="col">Experimental (ms)</th>
            <th scope="col">Δ (ms)</th>
            <th scope="col" title="Kernel launches in the region, baseline → experimental">Kernels</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((f) => (
            <tr key={f.family} data-family={f.family}>
              <td class="text">{f.label}</td>
              <td>{formatMs(f.baseline_us)}</td>
              <td>{formatMs(f.experimental_us)}</td>
              <td>
                <DeltaText value={f.delta_us} text={formatSignedMs(f.delta_us)} />
              </td>
              <td>{f.kernels}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
