/**
 * Entry point. TensorBoard's plugin_entry.html does
 * `import("./index.js").then((m) => void m.render())` inside an iframe whose
 * CSP allows only same-origin scripts: everything (CSS included) is in this
 * one bundle and styles are applied as a constructable stylesheet, no inline
 * <script> or <style> markup and no network beyond our own API.
 */
import { render as preactRender } from "preact";
import uplotCss from "uplot/dist/uPlot.min.css";
import { ApiClient } from "./api";
import { HostIpc } from "./hostIpc";
import { readInitialState } from "./hostState";
import appCss from "./styles.css";
import { App } from "./views/App";

function injectStyles(doc: Document): void {
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(`${uplotCss}\n${appCss}`);
  doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
}

let rendered = false;

export async function render(): Promise<void> {
  // TensorBoard calls render() once per iframe; guard anyway so a second
  // call (tests, hot reload) does not mount a second app.
  if (rendered) return;
  rendered = true;
  injectStyles(document);
  document.title = "tb_pipeline";
  const root = document.createElement("div");
  root.id = "tb-pipeline-root";
  document.body.appendChild(root);
  const ipc = HostIpc.connect(window);
  const initial = await readInitialState(ipc);
  preactRender(<App client={new ApiClient()} ipc={ipc} initial={initial} />, root);
}
