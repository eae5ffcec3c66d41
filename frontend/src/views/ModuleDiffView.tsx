/**
 * Module diff: the two executions cut into aligned pieces (diff/modules),
 * drawn as two charts and a table of the pieces. Clicking a piece zooms
 * into its children; the breadcrumb goes back; the selected piece restricts
 * the operator table below.
 */
import { useEffect, useRef } from "preact/hooks";
import type { ApiClient, DiffModulesResponse, DiffPiece, DiffSelection } from "../api";
import { CompiledRegionTable } from "../components/CompiledRegionTable";
import { DeltaText } from "../components/Delta";
import { Loading } from "../components/Loading";
import { ErrorMessage, Message } from "../components/Message";
import { ModuleDiffCharts } from "../components/ModuleDiffCharts";
import { ModuleDiffTable } from "../components/ModuleDiffTable";
import { NoteText } from "../components/NoteText";
import { ProfilerPair } from "../components/ProfilerLink";
import { formatMsWithUnit, formatSignedMsWithUnit } from "../model/format";
import { accumulated, clockTimes, moduleDiffControls, pieceStep, selectedPiece } from "../model/moduleDiff";
import { sidesOf } from "../model/profilerLink";
import { timelineOf, type UrlState } from "../model/urlState";
import { useRequest } from "../useRequest";
import { DiffTableView } from "./DiffTableView";

interface Props {
  client: ApiClient;
  sel: DiffSelection;
  state: UrlState;
  onChange: (patch: Partial<UrlState>) => void;
  reloadToken: number;
}

export function ModuleDiffView({ client, sel, state, onChange, reloadToken }: Props) {
  const req = useRequest<DiffModulesResponse>(
    (opts) => client.diffModules(sel, state.path, opts),
    [client, sel.baseline, sel.bWorker, sel.bSpan, sel.experimental, sel.eWorker, sel.eSpan, reloadToken, state.path],
  );

  // After a zoom or a breadcrumb step the view is replaced while the new
  // level loads: put the focus on the new level's name once it is there.
  const focusCrumb = useRef(false);
  const crumbRef = useRef<HTMLSpanElement>(null);
  useEffect(() => {
    if (req.state === "ok" && focusCrumb.current) {
      focusCrumb.current = false;
      crumbRef.current?.focus();
    }
  }, [req.state]);
  const goTo = (path: string) => {
    if (path !== state.path) focusCrumb.current = true;
    onChange({ path, piece: path });
  };

  if (req.state === "loading" || req.state === "idle") return <Loading what="the module comparison" waitingFor={req.state === "loading" ? req.waitingFor : null} />;
  if (req.state === "error") return <ErrorMessage error={req.error} what="the module comparison" />;
  const d = req.data;
  const controls = moduleDiffControls(d, state.time, state.pass);
  const clock = controls.clock;
  const pieces = d.children;
  const nodeTimes = clockTimes(d.node, clock);

  const zoom = (p: DiffPiece) => goTo(p.path);
  const select = (p: DiffPiece) => onChange({ piece: p.path });
  const pick = (idx: number) => {
    const p = pieces[idx];
    if (!p) return;
    if (p.has_children) zoom(p);
    else select(p);
  };
  const selected = selectedPiece(d, state.piece);

  return (
    <div data-view="modules">
      <div class="toolbar">
        <nav class="crumbs" aria-label="Module zoom level">
          <ol>
            {d.breadcrumb.map((b, i) => {
              const current = i === d.breadcrumb.length - 1;
              return (
                <li key={b.path}>
                  {current ? (
                    <span aria-current="page" tabIndex={-1} ref={crumbRef}>
                      {b.name}
                    </span>
                  ) : (
                    <button type="button" onClick={() => goTo(b.path)}>
                      {b.name}
                    </button>
                  )}
                </li>
              );
            })}
          </ol>
        </nav>
        <span class="seg" role="group" aria-label="Which time to compare">
          {controls.times.map((b) => (
            <button key={b.value} type="button" aria-pressed={b.pressed} disabled={b.disabled} data-time={b.value} title={b.title} onClick={() => onChange({ time: b.value })}>
              {b.label}
            </button>
          ))}
        </span>
        <span class="seg" role="group" aria-label="Which passes a module's time includes">
          {controls.passes.map((b) => (
            <button key={b.value} type="button" aria-pressed={b.pressed} disabled={b.disabled} data-pass={b.value} title={b.title} onClick={() => onChange({ pass: b.value })}>
              {b.label}
            </button>
          ))}
        </span>
        <span class="muted small">
          {d.node.name}: baseline {formatMsWithUnit(nodeTimes.baseline)}, experimental {formatMsWithUnit(nodeTimes.experimental)} (
          <DeltaText value={nodeTimes.delta} text={formatSignedMsWithUnit(nodeTimes.delta)} />)
        </span>
        {d.path !== "" && (
          <button class="btn" type="button" data-testid="level-timeline" onClick={() => onChange(timelineOf(d.path))}>
            Timeline
          </button>
        )}
      </div>
      <p class="muted small time-hint" data-testid="time-hint">
        {controls.hint}
      </p>
      {d.per_unit_note ? (
        <Message kind="warn" title="Pieces per step, not per sample">
          <span data-testid="modules-per-unit-note">{d.per_unit_note}</span>
        </Message>
      ) : null}
      {d.recordings_note ? (
        <Message kind="info" title="One recording of a group">
          <span data-testid="modules-recordings-note">{d.recordings_note}</span>
        </Message>
      ) : null}
      {d.node.note ? (
        <Message kind="info" title="How this level is compared">
          <NoteText text={d.node.note} />
        </Message>
      ) : null}
      {d.approximate || d.children_total > d.children.length ? (
        <Message kind="info" title="A very wide level">
          {d.children_total > d.children.length
            ? `Showing the first ${d.children.length.toLocaleString()} of ${d.children_total.toLocaleString()} pieces. `
            : ""}
          {d.approximate
            ? "This level has so many pieces that they were aligned approximately: a few pieces may be paired with a neighbour of the same kind instead of their true counterpart."
            : ""}
        </Message>
      ) : null}
      {pieces.length === 0 ? (
        <Message kind="info" title="Nothing to compare at this level">
          {d.path === ""
            ? "Neither trace has module, data loading (DataLoader) or optimizer events. Record with torch.profiler(with_stack=True, with_modules=True) to get the module tree."
            : "This piece has no sub-pieces."}
        </Message>
      ) : (
        <>
          <ModuleDiffCharts d={d} clock={clock} onPick={pick} />
          <ModuleDiffTable
            pieces={pieces}
            accDelta={accumulated(d, clock).delta}
            clock={clock}
            selectedPath={state.piece}
            onZoom={zoom}
            onSelect={select}
            onTimeline={(p) => onChange(timelineOf(p.path))}
            stepOf={(p) => pieceStep(p, d)}
          />
          {pieces
            .filter((p) => p.compiled_region)
            .map((p) => (
              <CompiledRegionTable key={p.path} piece={p} />
            ))}
        </>
      )}
      <section aria-labelledby="md-ops">
        <h2 id="md-ops">
          Operators in {selected ? `“${selected.name}”` : "all steps"}
          {selected && state.piece !== "" && <ProfilerPair {...sidesOf(sel)} find={selected.name} />}
          {selected && state.piece !== "" && (
            <>
              {" "}
              <button class="linklike small" type="button" onClick={() => onChange({ piece: "" })}>
                show all operators
              </button>
            </>
          )}
        </h2>
        <DiffTableView
          client={client}
          sel={sel}
          table="operators"
          state={state}
          onChange={onChange}
          reloadToken={reloadToken}
          piece={state.piece && selected ? { path: state.piece, name: selected.name } : null}
          height={360}
        />
      </section>
    </div>
  );
}
