// Drives the official browser SDK (unleash-proxy-client) in Node, with its global fetch, against
// a proxy. Options as the first argument: {"url": ".../proxy", "clientKey": "...", "appName":
// "...", "refreshInterval": seconds, "metricsInterval": seconds, "context": {...}}.
// Then one JSON command a line on stdin, one JSON answer a line on stdout:
//   {"read": ["flag", ...]}            -> {"enabled": {flag: bool}, "variants": {flag: variant}}
//   {"context": {...}, "read": [...]}  -> updateContext, then the same answer
//   {"waitFor": "flag", "enabled": b}  -> {"seenAfterMs": n} once an update shows it so
//   {"sendMetrics": true}              -> {"sent": true} once the proxy took the counts
// It runs until its stdin closes.
const readline = require('node:readline');
const { UnleashClient, EVENTS } = require('unleash-proxy-client');

function answer(body) {
  process.stdout.write(`${JSON.stringify(body)}\n`);
}

function read(client, flags) {
  const enabled = {};
  const variants = {};
  for (const flag of flags) {
    enabled[flag] = client.isEnabled(flag);
    const { name, enabled: variantEnabled, payload } = client.getVariant(flag);
    variants[flag] = { name, enabled: variantEnabled, payload: payload ?? null };
  }
  return { enabled, variants };
}

function waitFor(client, flag, wanted) {
  const since = Date.now();
  return new Promise((resolve) => {
    const check = () => {
      if (client.isEnabled(flag) === wanted) {
        client.off(EVENTS.UPDATE, check);
        resolve({ seenAfterMs: Date.now() - since });
      }
    };
    client.on(EVENTS.UPDATE, check);
    check();
  });
}

async function main() {
  const options = JSON.parse(process.argv[2]);
  const client = new UnleashClient({ metricsIntervalInitial: 0, ...options });
  client.on(EVENTS.ERROR, (error) => {
    process.stderr.write(`unleash error: ${JSON.stringify(error)}\n`);
  });
  await client.start();
  answer({ ready: client.isReady() });
  const commands = readline.createInterface({ input: process.stdin });
  for await (const line of commands) {
    const command = JSON.parse(line);
    if (command.context) {
      await client.updateContext(command.context);
    }
    if (command.read) {
      answer(read(client, command.read));
    } else if (command.waitFor) {
      answer(await waitFor(client, command.waitFor, command.enabled));
    } else if (command.sendMetrics) {
      await client.sendMetrics();
      answer({ sent: true });
    }
  }
  client.stop();
  process.exit(0);
}

main().catch((error) => {
  process.stderr.write(`${error.stack || error}\n`);
  process.exit(1);
});
