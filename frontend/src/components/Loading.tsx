import { Message } from "./Message";

/** "Loading X…" in words; says so when the server is still parsing the run. */
export function Loading({ what, waitingFor }: { what: string; waitingFor: string | null }) {
  return (
    <Message kind="info" title={`Loading ${what}…`}>
      {waitingFor ? `The server is still parsing the trace (${waitingFor}); this view fills in when it is done.` : null}
    </Message>
  );
}
