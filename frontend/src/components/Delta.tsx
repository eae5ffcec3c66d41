/** A delta shown as signed text plus an arrow, coloured: never colour alone. */
import { deltaLook, formatPct, type Polarity } from "../model/format";

/**
 * `value` is the raw delta (experimental − baseline): the arrow follows its
 * sign, the colour follows `polarity` (lower is better by default; `neutral`
 * = no colour and no arrow). `neutral` (boolean) is kept as a shorthand.
 */
export function DeltaText({ value, text, neutral = false, polarity = "lower", title }: { value: number | null; text: string; neutral?: boolean; polarity?: Polarity; title?: string }) {
  const { dir, arrow } = deltaLook(value, neutral ? "neutral" : polarity);
  return (
    <span class={`delta ${dir}`} title={title ?? text}>
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
