/** The Memory tab's snapshot part (diff/memory's `snapshot`): which device and rows to show. */
import type { components } from "../generated/api";

type Schemas = components["schemas"];
export type SnapshotDiff = Schemas["SnapshotDiff"];
export type SnapshotDeviceDiff = Schemas["SnapshotDeviceDiff"];
export type SnapshotRow = Schemas["SnapshotRow"];
export type SnapshotBy = "category" | "frame" | "module";

export const SNAPSHOT_BY: { id: SnapshotBy; label: string }[] = [
  { id: "category", label: "By category" },
  { id: "frame", label: "By Python frame" },
  { id: "module", label: "By module" },
];

/** The first device both runs have, else the first. */
export function snapshotDevice(s: SnapshotDiff): SnapshotDeviceDiff | null {
  return s.devices.find((d) => d.baseline && d.experimental) ?? s.devices[0] ?? null;
}

export function snapshotRows(d: SnapshotDeviceDiff, by: SnapshotBy): SnapshotRow[] {
  return by === "category" ? d.by_category : by === "frame" ? d.by_frame : d.by_module;
}
