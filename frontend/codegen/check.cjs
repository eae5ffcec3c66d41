// Fails when the committed types differ from what the OpenAPI document generates.
const fs = require("fs");
const fresh = fs.readFileSync(".api-check.ts", "utf8");
fs.unlinkSync(".api-check.ts");
const committed = fs.existsSync("../src/generated/api.ts") ? fs.readFileSync("../src/generated/api.ts", "utf8") : "";
if (fresh !== committed) {
  console.error("frontend/src/generated/api.ts is stale: run `make api` (or `npm run gen` in frontend/codegen)");
  process.exit(1);
}
console.log("frontend/src/generated/api.ts matches docs/openapi.json");
