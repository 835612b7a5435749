// Runs one open-source Unleash Proxy (@unleash/proxy) against a server, as its own process.
// Usage: node proxy.js '{"unleashUrl": ".../api/", "unleashApiToken": "...", "clientKeys":
// ["..."], "refreshInterval": 1000, "metricsInterval": 1000, "unleashAppName": "..."}'
// The options are createApp's (the proxy's UNLEASH_* variables). Listens on a free port of
// 127.0.0.1 and prints {"port": N} once listening; the proxy answers 503 until its first fetch.
const { createApp } = require('@unleash/proxy');

const options = JSON.parse(process.argv[2]);
const app = createApp({ logLevel: 'warn', ...options });
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
