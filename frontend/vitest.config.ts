import { defineConfig } from "vitest/config";

// The unit tests cover pure modules (table model, URL state, formatting):
// no DOM needed, so the default node environment keeps them fast.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
