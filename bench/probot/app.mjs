// The smallest Probot app that takes the benchmark's deliveries: Probot
// verifies each signature, and `issues.opened` and `issue_comment.created`
// (BENCH_EVENT) are handled by doing nothing. Like the reference figures, it stores nothing. Started
// the way `probot run` starts an app, so the environment configures it
// (APP_ID, PRIVATE_KEY_PATH, WEBHOOK_SECRET, HOST, PORT, WEBHOOK_PATH,
// LOG_LEVEL: Probot's default `info` logs every request).
import { run } from "probot";

await run((app) => {
  app.on("issues.opened", async () => {});
  app.on("issue_comment.created", async () => {});
});
