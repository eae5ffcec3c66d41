/** A server note as text, with `backticked` parts shown as code (never parsed as HTML). */
export function NoteText({ text }: { text: string }) {
  const parts = text.split("`");
  // An odd number of parts means the backticks pair up; otherwise show them as written.
  if (parts.length < 3 || parts.length % 2 === 0) return <>{text}</>;
  return <>{parts.map((p, i) => (i % 2 === 1 ? <code key={i}>{p}</code> : p))}</>;
}
