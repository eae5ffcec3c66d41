/** Empty, loading and error states in words (never an endless spinner). */
import type { ComponentChildren } from "preact";
import { ApiError } from "../api";

export function Message({ kind, title, children }: { kind: "info" | "warn" | "error"; title: string; children?: ComponentChildren }) {
  return (
    <div class={`msg ${kind}`} role={kind === "error" ? "alert" : "status"}>
      <span class="title">{title}</span>
      {children}
    </div>
  );
}

/** Explains a failed request using the server's JSON error message. */
export function ErrorMessage({ error, what }: { error: unknown; what: string }) {
  if (error instanceof ApiError) {
    if (error.status === 0)
      return (
        <Message kind="error" title={`TensorBoard did not answer for ${what}`}>
          The server stopped, restarted or is out of reach ({error.message}). Once it is back, press TensorBoard's reload button.
        </Message>
      );
    if (error.status === 409)
      return (
        <Message kind="info" title={`Still loading ${what}`}>
          The server is still parsing this run ({error.message}). It has not finished within the waiting time; press TensorBoard's
          reload button to try again.
        </Message>
      );
    if (error.status === 422)
      return (
        <Message kind="error" title={`Could not read ${what}`}>
          The run failed to parse: {error.message}
        </Message>
      );
    if (error.status === 404)
      return (
        <Message kind="error" title={`Not found: ${what}`}>
          {error.message}. The run may have been removed from the logdir; pick another one.
        </Message>
      );
    return (
      <Message kind="error" title={`Could not load ${what} (HTTP ${error.status})`}>
        {error.message}
      </Message>
    );
  }
  return (
    <Message kind="error" title={`Could not load ${what}`}>
      {error instanceof Error ? error.message : String(error)}
    </Message>
  );
}
