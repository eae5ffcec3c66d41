import { describe, expect, it } from "vitest";
import { byteTickLabels, byteTicks, formatBytes } from "../src/model/format";

const MiB = 2 ** 20;
const GiB = 2 ** 30;

describe("bytes in one unit system (IEC)", () => {
  it("prints binary multiples with binary unit names", () => {
    expect(formatBytes(32 * MiB)).toBe("32 MiB");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(13_033_000)).toBe("12.43 MiB");
    expect(formatBytes(-2 * GiB, true)).toBe("−2 GiB");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(null)).toBe("—");
  });

  it("puts axis ticks at round values of the unit the labels use", () => {
    // The axis: a 12.43 MiB peak under uPlot's decimal range; its own
    // ticks (10^7 B) printed as "9.54 MB", "19.07 MB".
    const ticks = byteTicks(0, 20_000_000, 3);
    expect(byteTickLabels(ticks)).toEqual(["0 MiB", "10 MiB"]);
    expect(ticks).toEqual([0, 10 * MiB]);
    expect(byteTickLabels(byteTicks(0, 14_000_000, 8))).toEqual(["0 MiB", "2 MiB", "4 MiB", "6 MiB", "8 MiB", "10 MiB", "12 MiB"]);
  });

  it("keeps one unit and one number of decimals over a whole axis", () => {
    const labels = byteTickLabels(byteTicks(0, 1.2 * GiB, 7));
    expect(labels).toEqual(["0.0 GiB", "0.2 GiB", "0.4 GiB", "0.6 GiB", "0.8 GiB", "1.0 GiB", "1.2 GiB"]);
    // A range that does not start at zero: ticks are still multiples of the step.
    expect(byteTickLabels(byteTicks(300 * MiB, 900 * MiB, 4))).toEqual(["400 MiB", "600 MiB", "800 MiB"]);
    // Every tick is a whole multiple of a 1-2-5 step in its unit.
    for (const [lo, hi, n] of [[0, 7_777_777, 6], [1234, 98_765, 5], [0, 3.3 * GiB, 9]] as const) {
      const t = byteTicks(lo, hi, n);
      expect(t.length).toBeGreaterThan(1);
      expect(t.length).toBeLessThanOrEqual(n);
      for (const label of byteTickLabels(t)) expect(label).toMatch(/^\d+(\.\d)? (B|KiB|MiB|GiB)$/);
    }
  });

  it("answers nothing for a range it cannot tick", () => {
    expect(byteTicks(5, 1, 4)).toEqual([]);
    expect(byteTicks(Number.NaN, 1, 4)).toEqual([]);
    expect(byteTicks(0, 0, 4)).toEqual([0]);
  });
});
