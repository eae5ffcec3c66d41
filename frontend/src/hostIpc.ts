/**
 * Talking to TensorBoard, the page around our iframe.
 *
 * TensorBoard's iframe plugin protocol: the guest posts the string
 * "experimental.bootstrap" to its parent window with one end of a
 * MessageChannel; from then on both sides exchange JSON strings
 * `{type, id, payload, error, isReply}` over that port, and each request
 * gets a reply with the same id. The host broadcasts
 * "experimental.DataReloaded" when the user presses TensorBoard's reload
 * button (or auto-reload fires) and answers "experimental.GetURLPluginData"
 * with the `p.<plugin>.*` keys of its URL hash.
 *
 * Outside TensorBoard (the plugin page opened on its own, a test page)
 * there is no parent: every call degrades to a no-op.
 */

interface IpcMessage {
  type: string;
  id: number;
  payload: unknown;
  error: string | null;
  isReply: boolean;
}

export const MSG_DATA_RELOADED = "experimental.DataReloaded";
export const MSG_GET_URL_DATA = "experimental.GetURLPluginData";

type Listener = (payload: unknown) => unknown;

export class HostIpc {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Map<string, Listener>();

  constructor(private readonly port: MessagePort | null) {
    port?.addEventListener("message", (ev: MessageEvent) => void this.onMessage(ev));
    port?.start();
  }

  /** Connects to the parent TensorBoard window, or returns a detached instance. */
  static connect(win: Window = window): HostIpc {
    if (win.parent === win) return new HostIpc(null);
    const channel = new MessageChannel();
    win.parent.postMessage("experimental.bootstrap", "*", [channel.port2]);
    return new HostIpc(channel.port1);
  }

  get connected(): boolean {
    return this.port !== null;
  }

  listen(type: string, cb: Listener): void {
    this.listeners.set(type, cb);
  }

  /** Sends a request; resolves with the host's reply, or `fallback` after `timeoutMs` (an old host that never answers). */
  request(type: string, payload: unknown, timeoutMs: number, fallback: unknown = null): Promise<unknown> {
    if (!this.port) return Promise.resolve(fallback);
    const id = this.nextId++;
    const port = this.port;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(fallback);
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: () => {
          clearTimeout(timer);
          resolve(fallback);
        },
      });
      const msg: IpcMessage = { type, id, payload, error: null, isReply: false };
      port.postMessage(JSON.stringify(msg));
    });
  }

  private async onMessage(ev: MessageEvent): Promise<void> {
    if (typeof ev.data !== "string") return;
    let msg: IpcMessage;
    try {
      msg = JSON.parse(ev.data) as IpcMessage;
    } catch {
      return;
    }
    if (msg.isReply) {
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.error) w.reject(new Error(msg.error));
      else w.resolve(msg.payload);
      return;
    }
    // A host broadcast waits for every guest's reply (Promise.all), so always answer.
    let payload: unknown = null;
    let error: string | null = null;
    const cb = this.listeners.get(msg.type);
    if (cb) {
      try {
        payload = (await cb(msg.payload)) ?? null;
      } catch (e) {
        error = String(e);
      }
    }
    const reply: IpcMessage = { type: msg.type, id: msg.id, payload, error, isReply: true };
    this.port?.postMessage(JSON.stringify(reply));
  }
}
