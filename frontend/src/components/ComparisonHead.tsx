/** The header row every baseline / experimental / Δ / Δ % comparison table shares. */
export function ComparisonHead() {
  return (
    <thead>
      <tr>
        <th scope="col">Metric</th>
        <th scope="col">
          <span class="swatch baseline" /> Baseline
        </th>
        <th scope="col">
          <span class="swatch experimental" /> Experimental
        </th>
        <th scope="col">Δ</th>
        <th scope="col">Δ %</th>
      </tr>
    </thead>
  );
}
