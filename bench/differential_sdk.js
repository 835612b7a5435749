// The Node SDK's side of bench/differential.py (see bench/differential_sdk.py for the job and
// the answers): the official unleash-client, from tests/sdk/node/node_modules (NODE_PATH).
// Usage: NODE_PATH=tests/sdk/node/node_modules node bench/differential_sdk.js JOB.json
const fs = require('fs');
const { startUnleash, InMemStorageProvider } = require('unleash-client');

async function main() {
  const job = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const result = {};
  for (const [environment, token] of Object.entries(job.tokens)) {
    const unleash = await startUnleash({
      url: `${job.url}/`,
      appName: 'differential-node',
      customHeaders: { Authorization: token },
      storageProvider: new InMemStorageProvider(),
      refreshInterval: 3600000,
      disableMetrics: true,
      skipInstanceCountWarning: true,
    });
    const flags = {};
    for (const flag of job.flags[environment]) {
      flags[flag] = job.contexts.map((context) => {
        const enabled = unleash.isEnabled(flag, { ...context });
        const chosen = unleash.getVariant(flag, { ...context });
        return [enabled, chosen.name, chosen.enabled, chosen.payload || null];
      });
    }
    result[environment] = flags;
    unleash.destroy();
  }
  process.stdout.write(JSON.stringify(result));
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
