import { defineConfig } from "vitest/config";

// Unit tests of the dashboard's pure modules (no DOM needed): node environment.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
