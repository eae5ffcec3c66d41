/** A delta shown as signed text plus an arrow, coloured: never colour alone. */
import { deltaArrow, deltaDirection, formatPct } from "../model/format";

export function DeltaText({ value, text, neutral = false }: { value: number | null; text: string; neutral?: boolean }) {
  const dir = neutral ? "same" : deltaDirection(value);
  const arrow = deltaArrow(value);
  return (
    <span class={`delta ${dir}`}>
      {text}
      {arrow && (
        <span class="arrow" aria-hidden="true">
          {arrow}
        </span>
      )}
    </span>
  );
}

export function DeltaPct({ pct, neutral = false }: { pct: number | null; neutral?: boolean }) {
  return <DeltaText value={pct} text={formatPct(pct)} neutral={neutral} />;
}
