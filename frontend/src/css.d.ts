// esbuild's text loader hands a .css import over as its source text.
declare module "*.css" {
  const text: string;
  export default text;
}
