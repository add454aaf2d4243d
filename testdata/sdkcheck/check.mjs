// check.mjs - cross-check of official webhook SDKs (Node >= 20; `npm ci` then `node check.mjs`).
//
// For each SDK: sign a fixed body with a fixed secret (with the SDK's own signing helper where it
// has one, otherwise with node:crypto exactly as the provider documents), verify it back with the
// SDK's verify function, and print one JSON line on stdout:
//   {"sdk","version","scheme","headers","body","secret","verified","rejects_tampered", ...extra}
// extra: url/method (schemes that sign the URL), sign_api, verify_api, key material for
// asymmetric schemes. The lines are ready-made test vectors for the Go receiver (headers are the
// HTTP header names the provider sends). Timestamps are "now" (see CHECK_SKEW_SECONDS below).
// Exit code 1 if any line does not verify, or verifies a tampered body, or anything touched the
// network. The summary ("N passed, N failed") goes to stderr.
//
// Every network call is refused (net.Socket.connect, dns, fetch): verification must be offline.
// SDKs are loaded with dynamic import() so that the guard is in place before any SDK code runs and
// a broken SDK only fails its own line.

import crypto from 'node:crypto';
import net from 'node:net';
import dns from 'node:dns';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// ---------------------------------------------------------------- no network
const netAttempts = [];
function refuse(what) {
  return function () {
    netAttempts.push(what);
    throw new Error(`check.mjs: network refused (${what})`);
  };
}
net.Socket.prototype.connect = refuse('net.Socket.connect');
dns.lookup = refuse('dns.lookup');
dns.promises.lookup = refuse('dns.promises.lookup');
globalThis.fetch = async () => refuse('fetch')();

// ---------------------------------------------------------------- fixed inputs
const HERE = path.dirname(fileURLToPath(import.meta.url));

// One body for every SDK (except Linear, which needs webhookTimestamp inside the signed body).
// It carries non-ASCII (UTF-8 bytes are signed, not JS chars), a known Polar event type,
// Coinbase Commerce's required "event" object, and no integer "weight" (see EasyPost).
const BODY =
  '{"id":"evt_xcheck_0001","type":"order.created","created":1700000000,' +
  '"event":{"id":"evt_xcheck_0001","type":"charge:confirmed"},' +
  '"data":{"object":{"id":"obj_1","note":"h\u00e9llo \u2713 \u65e5\u672c"}}}';

// Plain shared secret (HMAC key = its UTF-8 bytes).
const SECRET = 'hookline-cross-check-secret';
// Standard Webhooks / Svix style secret: whsec_ + base64(key bytes). Key = the 32 bytes below.
const WHSEC_KEY = Buffer.from('hookline-standard-webhooks-key!!'); // 32 bytes
const WHSEC = 'whsec_' + WHSEC_KEY.toString('base64');

// Ed25519 (Discord, Telnyx): fixed 32-byte seed -> PKCS#8 DER.
const ED_SEED = crypto.createHash('sha256').update('hookline-ed25519-seed').digest();
const ED_PRIV = crypto.createPrivateKey({
  key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), ED_SEED]),
  format: 'der',
  type: 'pkcs8',
});
const ED_PUB_RAW = crypto.createPublicKey(ED_PRIV).export({ format: 'der', type: 'spki' }).subarray(-32);

// ECDSA P-256 (SendGrid): fixed key pair.
const EC_PRIV_PEM = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmdDrsdhwOYeHZ0o2
IJVdAckGS1KgjK25QOmDCTGA8umhRANCAAQxFQqz9z4i0yBIvFz3m00zd7mb0omj
Opnul9vh0YMKsfc7U/l5PP6QOuLYJA4f8yrfX/d9MPpvXpuWVTtjnJsv
-----END PRIVATE KEY-----
`;
// What SendGrid's dashboard shows: base64 of the DER SubjectPublicKeyInfo, no PEM armour.
const EC_PUB_B64 = crypto.createPublicKey(EC_PRIV_PEM).export({ format: 'der', type: 'spki' }).toString('base64');

// ---------------------------------------------------------------- helpers
const hmac = (alg, key, data, enc) => crypto.createHmac(alg, key).update(data).digest(enc);
// Signing time = now, shifted by CHECK_SKEW_SECONDS (default 0) to probe each SDK's clock window:
//   CHECK_SKEW_SECONDS=-400 node check.mjs   -> every signature is 400 s old
// (verification always runs on the real clock). With a skew the run only reports; it exits 0.
const SKEW = Number(process.env.CHECK_SKEW_SECONDS ?? 0);
const nowMs = () => Date.now() + SKEW * 1000;
const nowSec = () => Math.floor(nowMs() / 1000);
const nowDate = () => new Date(nowMs());
const rfc3339 = (d = nowDate()) => d.toISOString().replace(/\.\d{3}Z$/, '+00:00');

function version(pkg) {
  // read node_modules/<pkg>/package.json directly: several packages do not export ./package.json
  const p = path.join(HERE, 'node_modules', ...pkg.split('/'), 'package.json');
  return JSON.parse(fs.readFileSync(p, 'utf8')).version;
}

// Standard Webhooks signature computed without any SDK: base64(HMAC-SHA256(key, id.ts.body)).
function standardSig(keyBytes, id, ts, body) {
  return 'v1,' + hmac('sha256', keyBytes, `${id}.${ts}.${body}`, 'base64');
}

// Negative control: every check is run a second time with TAMPER on. V() then changes the bytes
// handed to the SDK's verify call (the signature stays that of the original body), and the SDK
// must reject (return false or throw). A line is only good if verified && rejects_tampered.
let TAMPER = false;
const V = (b) => (TAMPER ? b.slice(0, -1) + ' ' + b.slice(-1) : b);

const checks = [];
function check(sdk, pkg, scheme, fn) {
  checks.push({ sdk, pkg, scheme, fn });
}

// ================================================================= SDKs

check('stripe', 'stripe', 'stripe', async () => {
  const { default: Stripe } = await import('stripe');
  const secret = 'whsec_hookline_cross_check_stripe'; // Stripe uses the whole string as HMAC key (no base64)
  const sig = Stripe.webhooks.generateTestHeaderString({ payload: BODY, secret, timestamp: nowSec() });
  const event = Stripe.webhooks.constructEvent(V(BODY), sig, secret); // tolerance 300 s (default)
  await Stripe.webhooks.constructEventAsync(V(BODY), sig, secret, 300);
  return {
    headers: { 'Stripe-Signature': sig },
    secret,
    verified: event.id === 'evt_xcheck_0001',
    sign_api: 'Stripe.webhooks.generateTestHeaderString({payload, secret})',
    verify_api: 'Stripe.webhooks.constructEvent(body, header, secret, tolerance?)',
  };
});

check('svix', 'svix', 'standard-webhooks (svix-* headers)', async () => {
  const { Webhook } = await import('svix');
  const wh = new Webhook(WHSEC);
  const id = 'msg_xcheck_0001';
  const ts = nowDate();
  const sig = wh.sign(id, ts, BODY);
  const headers = { 'svix-id': id, 'svix-timestamp': String(Math.floor(ts / 1000)), 'svix-signature': sig };
  const out = wh.verify(V(BODY), headers); // returns undefined, throws WebhookVerificationError
  return { headers, secret: WHSEC, verified: out === undefined, sign_api: 'new Webhook(secret).sign(id, date, body)', verify_api: 'new Webhook(secret).verify(body, headers)' };
});

check('standardwebhooks', 'standardwebhooks', 'standard-webhooks', async () => {
  const { Webhook } = await import('standardwebhooks');
  const wh = new Webhook(WHSEC);
  const id = 'msg_xcheck_0002';
  const ts = nowDate();
  const sig = wh.sign(id, ts, BODY);
  const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(ts / 1000)), 'webhook-signature': sig };
  const parsed = wh.verify(V(BODY), headers);
  return { headers, secret: WHSEC, verified: parsed.id === 'evt_xcheck_0001', sign_api: 'new Webhook(secret).sign(id, date, body)', verify_api: 'new Webhook(secret).verify(body, headers)' };
});

check('@octokit/webhooks-methods', '@octokit/webhooks-methods', 'github', async () => {
  const { sign, verify } = await import('@octokit/webhooks-methods');
  const sig = await sign(SECRET, BODY);
  const ok = await verify(SECRET, V(BODY), sig);
  return {
    headers: { 'X-Hub-Signature-256': sig, 'X-GitHub-Event': 'ping', 'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' },
    secret: SECRET, verified: ok === true,
    sign_api: 'await sign(secret, body)', verify_api: 'await verify(secret, body, signature) -> boolean',
  };
});

check('@octokit/webhooks', '@octokit/webhooks', 'github', async () => {
  const { Webhooks } = await import('@octokit/webhooks');
  const webhooks = new Webhooks({ secret: SECRET });
  const sig = await webhooks.sign(BODY);
  const ok = await webhooks.verify(V(BODY), sig);
  let received = false;
  webhooks.onAny(() => { received = true; });
  await webhooks.verifyAndReceive({ id: '72d3162e-cc78-11e3-81ab-4c9367dc0958', name: 'ping', payload: V(BODY), signature: sig });
  return {
    headers: { 'X-Hub-Signature-256': sig, 'X-GitHub-Event': 'ping', 'X-GitHub-Delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958' },
    secret: SECRET, verified: ok === true && received,
    sign_api: 'await new Webhooks({secret}).sign(body)', verify_api: 'await webhooks.verify(body, sig) / verifyAndReceive({id,name,payload,signature})',
  };
});

check('twilio', 'twilio', 'twilio form (x-www-form-urlencoded params)', async () => {
  const { default: twilio } = await import('twilio');
  const authToken = '0123456789abcdef0123456789abcdef';
  const url = 'https://example.com/hooks/twilio?source=xcheck';
  const params = { AccountSid: 'AC00000000000000000000000000000000', CallSid: 'CA123', From: '+15551234567', To: '+15557654321', Body: 'h\u00e9llo \u2713' };
  const body = new URLSearchParams(params).toString();
  const sig = twilio.getExpectedTwilioSignature(authToken, url, params);
  const ok = twilio.validateRequest(authToken, sig, url, { ...params, Body: V(params.Body) });
  return {
    headers: { 'X-Twilio-Signature': sig, 'Content-Type': 'application/x-www-form-urlencoded' },
    body, url, method: 'POST', secret: authToken, verified: ok === true,
    sign_api: 'twilio.getExpectedTwilioSignature(authToken, url, params)', verify_api: 'twilio.validateRequest(authToken, sig, url, params)',
  };
});

check('twilio', 'twilio', 'twilio json (bodySHA256 query param)', async () => {
  const { default: twilio } = await import('twilio');
  const authToken = '0123456789abcdef0123456789abcdef';
  const url = `https://example.com/hooks/twilio?bodySHA256=${twilio.getExpectedBodyHash(BODY)}`;
  const sig = twilio.getExpectedTwilioSignature(authToken, url, {});
  const ok = twilio.validateRequestWithBody(authToken, sig, url, V(BODY));
  return {
    headers: { 'X-Twilio-Signature': sig, 'Content-Type': 'application/json' },
    url, method: 'POST', secret: authToken, verified: ok === true,
    sign_api: 'getExpectedBodyHash(body) + getExpectedTwilioSignature(authToken, urlWithBodySHA256, {})', verify_api: 'twilio.validateRequestWithBody(authToken, sig, url, body)',
  };
});

check('@sendgrid/eventwebhook', '@sendgrid/eventwebhook', 'sendgrid ecdsa p-256', async () => {
  const { EventWebhook, EventWebhookHeader } = (await import('@sendgrid/eventwebhook')).default;
  const ts = String(nowSec());
  // documented: ECDSA P-256 / SHA-256 over timestamp + payload, signature = base64(DER)
  const sig = crypto.sign('sha256', Buffer.from(ts + BODY, 'utf8'), EC_PRIV_PEM).toString('base64');
  const ew = new EventWebhook();
  const ok = ew.verifySignature(ew.convertPublicKeyToECDSA(EC_PUB_B64), V(BODY), sig, ts);
  return {
    headers: { [EventWebhookHeader.SIGNATURE()]: sig, [EventWebhookHeader.TIMESTAMP()]: ts },
    secret: EC_PUB_B64, signing_key_pem: EC_PRIV_PEM, verified: ok === true,
    sign_api: null, verify_api: 'new EventWebhook().verifySignature(convertPublicKeyToECDSA(pubKey), body, sig, ts)',
  };
});

check('@paddle/paddle-node-sdk', '@paddle/paddle-node-sdk', 'paddle', async () => {
  const { Paddle } = await import('@paddle/paddle-node-sdk');
  const paddle = new Paddle('pdl_sdbx_apikey_xcheck'); // constructor also initialises the Node crypto runtime
  const secret = 'pdl_ntfset_01hookline_xcheck_secret';
  const ts = nowSec();
  const header = `ts=${ts};h1=${hmac('sha256', secret, `${ts}:${BODY}`, 'hex')}`;
  const ok = await paddle.webhooks.isSignatureValid(V(BODY), secret, header); // only 5 s of tolerance!
  const event = await paddle.webhooks.unmarshal(V(BODY), secret, header);
  return {
    headers: { 'Paddle-Signature': header }, secret, verified: ok === true && !!event,
    sign_api: null, verify_api: 'await paddle.webhooks.unmarshal(body, secret, header) / isSignatureValid(...)',
  };
});

check('razorpay', 'razorpay', 'razorpay', async () => {
  const { default: Razorpay } = await import('razorpay');
  const sig = hmac('sha256', SECRET, BODY, 'hex');
  const ok = Razorpay.validateWebhookSignature(V(BODY), sig, SECRET);
  return { headers: { 'X-Razorpay-Signature': sig }, secret: SECRET, verified: ok === true, sign_api: null, verify_api: 'Razorpay.validateWebhookSignature(body, sig, secret)' };
});

check('square', 'square', 'square (url + body)', async () => {
  const { WebhooksHelper } = await import('square');
  const notificationUrl = 'https://example.com/hooks/square';
  const sig = hmac('sha256', SECRET, notificationUrl + BODY, 'base64');
  const ok = await WebhooksHelper.verifySignature({ requestBody: V(BODY), signatureHeader: sig, signatureKey: SECRET, notificationUrl });
  return { headers: { 'x-square-hmacsha256-signature': sig }, url: notificationUrl, method: 'POST', secret: SECRET, verified: ok === true, sign_api: null, verify_api: 'await WebhooksHelper.verifySignature({requestBody, signatureHeader, signatureKey, notificationUrl})' };
});

check('@line/bot-sdk', '@line/bot-sdk', 'line', async () => {
  const { validateSignature } = await import('@line/bot-sdk');
  const sig = hmac('sha256', SECRET, BODY, 'base64');
  const ok = validateSignature(V(BODY), SECRET, sig);
  return { headers: { 'x-line-signature': sig }, secret: SECRET, verified: ok === true, sign_api: null, verify_api: 'validateSignature(body, channelSecret, sig)' };
});

check('@workos-inc/node', '@workos-inc/node', 'workos (ms timestamp)', async () => {
  const { WorkOS } = await import('@workos-inc/node');
  const workos = new WorkOS('sk_test_xcheck');
  const tsMs = nowMs(); // WorkOS signs a millisecond timestamp
  const v1 = await workos.webhooks.computeSignature(tsMs, BODY, SECRET);
  const header = `t=${tsMs}, v1=${v1}`;
  const ok = await workos.webhooks.verifyHeader({ payload: V(BODY), sigHeader: header, secret: SECRET }); // tolerance 180000 ms
  return { headers: { 'WorkOS-Signature': header }, secret: SECRET, verified: ok === true, sign_api: 'await workos.webhooks.computeSignature(tsMs, body, secret)', verify_api: 'await workos.webhooks.verifyHeader({payload, sigHeader, secret, tolerance?}) / constructEvent(...)' };
});

check('telnyx', 'telnyx', 'telnyx ed25519', async () => {
  const { default: Telnyx } = await import('telnyx');
  const publicKey = ED_PUB_RAW.toString('base64');
  const client = new Telnyx({ apiKey: 'KEYxcheck', publicKey });
  const ts = String(nowSec());
  const sig = crypto.sign(null, Buffer.from(`${ts}|${BODY}`, 'utf8'), ED_PRIV).toString('base64');
  const headers = { 'telnyx-signature-ed25519': sig, 'telnyx-timestamp': ts };
  const event = await client.webhooks.unwrap(V(BODY), { headers });
  return { headers, secret: publicKey, signing_key_seed_hex: ED_SEED.toString('hex'), verified: event.id === 'evt_xcheck_0001', sign_api: null, verify_api: 'await client.webhooks.unwrap(body, {headers, key?})' };
});

for (const v of ['v1', 'v2', 'v3']) {
  check('@hubspot/api-client', '@hubspot/api-client', `hubspot ${v}`, async () => {
    const { Signature } = await import('@hubspot/api-client');
    const url = 'https://example.com/hooks/hubspot';
    const method = 'POST';
    const timestamp = nowMs(); // v3: milliseconds
    const opts = { clientSecret: SECRET, requestBody: BODY, url, timestamp };
    const sig = Signature.getSignature(method, v, opts);
    const ok = Signature.isValid({ ...opts, requestBody: V(BODY), signature: sig, signatureVersion: v, method });
    const headers = v === 'v3'
      ? { 'X-HubSpot-Signature-v3': sig, 'X-HubSpot-Request-Timestamp': String(timestamp) }
      : { 'X-HubSpot-Signature': sig, 'X-HubSpot-Signature-Version': v };
    return { headers, url, method, secret: SECRET, verified: ok === true, sign_api: 'Signature.getSignature(method, version, {clientSecret, requestBody, url, timestamp})', verify_api: 'Signature.isValid({signature, clientSecret, requestBody, signatureVersion, url, method, timestamp})' };
  });
}

check('discord-interactions', 'discord-interactions', 'discord ed25519', async () => {
  const { verifyKey } = await import('discord-interactions');
  const ts = String(nowSec());
  const sig = crypto.sign(null, Buffer.from(ts + BODY, 'utf8'), ED_PRIV).toString('hex');
  const pubHex = ED_PUB_RAW.toString('hex');
  const ok = await verifyKey(V(BODY), sig, ts, pubHex);
  return { headers: { 'X-Signature-Ed25519': sig, 'X-Signature-Timestamp': ts }, secret: pubHex, signing_key_seed_hex: ED_SEED.toString('hex'), verified: ok === true, sign_api: null, verify_api: 'await verifyKey(rawBody, sigHex, timestamp, publicKeyHex)' };
});

check('@linear/sdk', '@linear/sdk', 'linear (webhookTimestamp in body)', async () => {
  const { LinearWebhookClient, LINEAR_WEBHOOK_SIGNATURE_HEADER, LINEAR_WEBHOOK_TS_HEADER } = await import('@linear/sdk/webhooks');
  const tsMs = nowMs();
  // Linear only trusts the signed body's webhookTimestamp (ms, +-60 s), so the body differs here.
  const body = `{"action":"create","type":"Issue","data":{"id":"iss_1","title":"h\u00e9llo \u2713"},"webhookTimestamp":${tsMs}}`;
  const sig = hmac('sha256', SECRET, body, 'hex');
  const client = new LinearWebhookClient(SECRET);
  const ok = client.verify(Buffer.from(V(body), 'utf8'), sig);
  const parsed = client.parseData(Buffer.from(V(body), 'utf8'), sig);
  return { headers: { [LINEAR_WEBHOOK_SIGNATURE_HEADER]: sig, [LINEAR_WEBHOOK_TS_HEADER]: String(tsMs) }, body, secret: SECRET, verified: ok === true && parsed.type === 'Issue', sign_api: null, verify_api: 'new LinearWebhookClient(secret).verify(rawBodyBuffer, sig) / parseData(...)' };
});

check('gocardless-nodejs', 'gocardless-nodejs', 'gocardless', async () => {
  const { verifySignature, parse } = await import('gocardless-nodejs/webhooks');
  const sig = hmac('sha256', SECRET, BODY, 'hex');
  verifySignature(V(BODY), SECRET, sig); // throws InvalidSignatureError
  parse(V(BODY), SECRET, sig);
  return { headers: { 'Webhook-Signature': sig }, secret: SECRET, verified: true, sign_api: null, verify_api: 'verifySignature(body, secret, sig) (throws) / parse(...) / parseWithMeta(...)' };
});

check('@mux/mux-node', '@mux/mux-node', 'mux', async () => {
  const { default: Mux } = await import('@mux/mux-node');
  const mux = new Mux({ tokenId: 'xcheck', tokenSecret: 'xcheck', webhookSecret: SECRET });
  const ts = nowSec();
  const header = `t=${ts},v1=${hmac('sha256', SECRET, `${ts}.${BODY}`, 'hex')}`;
  const headers = { 'mux-signature': header };
  await mux.webhooks.verifySignature(V(BODY), headers, SECRET); // throws
  const event = await mux.webhooks.unwrap(V(BODY), headers);
  return { headers, secret: SECRET, verified: event.id === 'evt_xcheck_0001', sign_api: null, verify_api: 'await mux.webhooks.verifySignature(body, headers, secret?) / unwrap(body, headers, secret?)' };
});

check('replicate', 'replicate', 'standard-webhooks (replicate)', async () => {
  const { validateWebhook } = (await import('replicate')).default;
  const id = 'msg_xcheck_0003';
  const ts = String(nowSec());
  const sig = standardSig(WHSEC_KEY, id, ts, BODY);
  const headers = { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig };
  const ok1 = await validateWebhook({ id, timestamp: ts, signature: sig, body: V(BODY), secret: WHSEC });
  const ok2 = await validateWebhook({ headers, body: V(BODY) }, WHSEC);
  return { headers, secret: WHSEC, verified: ok1 === true && ok2 === true, sign_api: null, verify_api: 'await validateWebhook({id,timestamp,signature,body,secret}) | validateWebhook({headers, body}, secret)' };
});

check('coinbase-commerce-node', 'coinbase-commerce-node', 'coinbase commerce', async () => {
  const { Webhook } = (await import('coinbase-commerce-node')).default;
  const sig = Webhook.computeSignature(BODY, SECRET);
  const event = Webhook.verifyEventBody(V(BODY), sig, SECRET); // body must contain "event"
  return { headers: { 'X-CC-Webhook-Signature': sig }, secret: SECRET, verified: event.id === 'evt_xcheck_0001', sign_api: 'Webhook.computeSignature(body, secret)', verify_api: 'Webhook.verifyEventBody(body, sig, secret) / verifySigHeader(...)' };
});

for (const flavour of ['X-Shopify', 'Shopify-events']) {
  check('@shopify/shopify-api', '@shopify/shopify-api', flavour === 'X-Shopify' ? 'shopify webhooks (X-Shopify-* headers)' : 'shopify events (shopify-* headers)', async () => {
    await import('@shopify/shopify-api/adapters/web-api');
    const { shopifyApi, ApiVersion, LogSeverity } = await import('@shopify/shopify-api');
    const { getHmac } = await import('@shopify/shopify-api/test-helpers');
    const shopify = shopifyApi({
      apiKey: 'xcheck-api-key', apiSecretKey: SECRET, apiVersion: ApiVersion.July25,
      hostName: 'example.com', isEmbeddedApp: false, logger: { level: LogSeverity.Error, log: async () => {} },
    });
    const sig = getHmac(BODY, SECRET); // base64(HMAC-SHA256(apiSecretKey, rawBody))
    const headers = flavour === 'X-Shopify'
      ? {
          'X-Shopify-Hmac-Sha256': sig, 'X-Shopify-Topic': 'orders/create', 'X-Shopify-Shop-Domain': 'xcheck.myshopify.com',
          'X-Shopify-API-Version': '2025-07', 'X-Shopify-Webhook-Id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
          'X-Shopify-Triggered-At': nowDate().toISOString(), 'X-Shopify-Event-Id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
        }
      : {
          'shopify-hmac-sha256': sig, 'shopify-topic': 'orders/create', 'shopify-shop-domain': 'xcheck.myshopify.com',
          'shopify-api-version': '2025-07', 'shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
          'shopify-triggered-at': nowDate().toISOString(), 'shopify-handle': 'xcheck', 'shopify-action': 'create',
        };
    const rawRequest = new Request('https://example.com/hooks/shopify', { method: 'POST', headers, body: V(BODY) });
    const res = await shopify.webhooks.validate({ rawBody: V(BODY), rawRequest });
    return { headers, secret: SECRET, verified: res.valid === true, result: res, sign_api: "getHmac(body, apiSecretKey) from '@shopify/shopify-api/test-helpers'", verify_api: 'await shopify.webhooks.validate({rawBody, rawRequest[, rawResponse]})' };
  });
}

check('resend', 'resend', 'standard-webhooks (svix-* headers, resend)', async () => {
  const { Resend } = await import('resend');
  const resend = new Resend('re_xcheck');
  const id = 'msg_xcheck_0004';
  const ts = String(nowSec());
  const sig = standardSig(WHSEC_KEY, id, ts, BODY);
  const event = resend.webhooks.verify({ payload: V(BODY), headers: { id, timestamp: ts, signature: sig }, webhookSecret: WHSEC });
  return { headers: { 'svix-id': id, 'svix-timestamp': ts, 'svix-signature': sig }, secret: WHSEC, verified: event.id === 'evt_xcheck_0001', sign_api: null, verify_api: 'resend.webhooks.verify({payload, headers: {id, timestamp, signature}, webhookSecret})' };
});

check('@clerk/backend', '@clerk/backend', 'standard-webhooks (svix-* headers, clerk)', async () => {
  const { verifyWebhook } = await import('@clerk/backend/webhooks');
  const id = 'msg_xcheck_0005';
  const ts = String(nowSec());
  const sig = standardSig(WHSEC_KEY, id, ts, BODY);
  const headers = { 'svix-id': id, 'svix-timestamp': ts, 'svix-signature': sig };
  const req = new Request('https://example.com/hooks/clerk', { method: 'POST', headers, body: V(BODY) });
  const event = await verifyWebhook(req, { signingSecret: WHSEC });
  return { headers, secret: WHSEC, verified: event.type === 'order.created', sign_api: null, verify_api: 'await verifyWebhook(fetchRequest, {signingSecret})' };
});

check('openai', 'openai', 'standard-webhooks (openai)', async () => {
  const { default: OpenAI } = await import('openai');
  const client = new OpenAI({ apiKey: 'sk-xcheck', webhookSecret: WHSEC });
  const id = 'wh_xcheck_0006';
  const ts = String(nowSec());
  const sig = standardSig(WHSEC_KEY, id, ts, BODY);
  const headers = { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig };
  await client.webhooks.verifySignature(V(BODY), headers, WHSEC, 300);
  const event = await client.webhooks.unwrap(V(BODY), headers);
  return { headers, secret: WHSEC, verified: event.id === 'evt_xcheck_0001', sign_api: null, verify_api: 'await client.webhooks.unwrap(body, headers, secret?, tolerance=300) / verifySignature(...)' };
});

check('@polar-sh/sdk', '@polar-sh/sdk', 'standard-webhooks (polar, utf-8 secret)', async () => {
  const { webhooks } = await import('@polar-sh/sdk/2026-10');
  const secret = 'polar_whs_hookline_xcheck_secret';
  const id = 'msg_xcheck_0007';
  const ts = String(nowSec());
  // Polar signs Standard Webhooks with the UTF-8 bytes of the secret as key (validateEvent also tries base64).
  const sig = standardSig(Buffer.from(secret, 'utf8'), id, ts, BODY);
  const headers = { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig };
  const event = await webhooks.validateEvent(V(BODY), headers, secret); // type must be a known event type
  return { headers, secret, verified: event.type === 'order.created', sign_api: null, verify_api: "await webhooks.validateEvent(body, headers, secret) from '@polar-sh/sdk/2026-10'" };
});

check('box-node-sdk', 'box-node-sdk', 'box (primary + secondary)', async () => {
  const { WebhooksManager } = await import('box-node-sdk/managers');
  const primary = SECRET;
  const secondary = SECRET + '-secondary';
  const ts = rfc3339();
  const headers = {
    'box-delivery-id': 'f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f',
    'box-delivery-timestamp': ts,
    'box-signature-algorithm': 'HmacSHA256',
    'box-signature-version': '1',
    'box-signature-primary': hmac('sha256', primary, BODY + ts, 'base64'),
    'box-signature-secondary': hmac('sha256', secondary, BODY + ts, 'base64'),
  };
  const ok = await WebhooksManager.validateMessage(V(BODY), headers, primary, { secondaryKey: secondary, maxAge: 600 });
  return { headers, secret: primary, secondary_secret: secondary, verified: ok === true, sign_api: null, verify_api: 'await WebhooksManager.validateMessage(body, lowercaseHeaders, primaryKey, {secondaryKey, maxAge})' };
});

check('pusher', 'pusher', 'pusher', async () => {
  const { default: Pusher } = await import('pusher');
  const key = 'xcheck-app-key';
  const pusher = new Pusher({ appId: '1', key, secret: SECRET, cluster: 'mt1' });
  const headers = { 'x-pusher-key': key, 'x-pusher-signature': hmac('sha256', SECRET, BODY, 'hex'), 'content-type': 'application/json' };
  const ok = pusher.webhook({ headers, rawBody: V(BODY) }).isValid();
  return { headers, secret: SECRET, app_key: key, verified: ok === true, sign_api: null, verify_api: 'pusher.webhook({headers (lower-case), rawBody}).isValid(extraTokens?)' };
});

check('@easypost/api', '@easypost/api', 'easypost', async () => {
  const { default: EasyPostClient } = await import('@easypost/api');
  const client = new EasyPostClient('EZTKxcheck');
  const sig = 'hmac-sha256-hex=' + hmac('sha256', Buffer.from(SECRET.normalize('NFKD'), 'utf8'), BODY, 'hex');
  const headers = { 'X-Hmac-Signature': sig };
  const event = client.Utils.validateWebhook(Buffer.from(V(BODY), 'utf8'), headers, SECRET); // throws SignatureVerificationError
  return { headers, secret: SECRET, verified: event.id === 'evt_xcheck_0001', sign_api: null, verify_api: 'client.Utils.validateWebhook(bodyBuffer, headers, secret)' };
});

check('@twurple/eventsub-http', '@twurple/eventsub-http', 'twitch eventsub', async () => {
  const { EventSubMiddleware } = await import('@twurple/eventsub-http');
  const mw = new EventSubMiddleware({ apiClient: {}, secret: SECRET, hostName: 'example.com', pathPrefix: '/twitch' });
  const id = 'e76c6bd4-55c9-4987-8304-da1588d8988b';
  const ts = nowDate().toISOString();
  const sig = 'sha256=' + hmac('sha256', SECRET, id + ts + BODY, 'hex');
  const ok = mw._verifyData(id, ts, V(BODY), sig); // @internal: the public path is the Express middleware
  return {
    headers: {
      'Twitch-Eventsub-Message-Id': id, 'Twitch-Eventsub-Message-Timestamp': ts, 'Twitch-Eventsub-Message-Signature': sig,
      'Twitch-Eventsub-Message-Type': 'notification', 'Twitch-Eventsub-Subscription-Type': 'channel.follow', 'Twitch-Eventsub-Subscription-Version': '2',
    },
    secret: SECRET, verified: ok === true, sign_api: null, verify_api: 'EventSubMiddleware#_verifyData(id, ts, body, sig) (internal; public use = middleware.apply(app))',
  };
});

check('@slack/bolt', '@slack/bolt', 'slack v0', async () => {
  const { verifySlackRequest, isValidSlackRequest } = await import('@slack/bolt');
  const ts = nowSec();
  const sig = 'v0=' + hmac('sha256', SECRET, `v0:${ts}:${BODY}`, 'hex');
  const headers = { 'x-slack-signature': sig, 'x-slack-request-timestamp': ts };
  verifySlackRequest({ signingSecret: SECRET, body: V(BODY), headers }); // throws
  const ok = isValidSlackRequest({ signingSecret: SECRET, body: V(BODY), headers });
  return { headers: { 'X-Slack-Signature': sig, 'X-Slack-Request-Timestamp': String(ts) }, secret: SECRET, verified: ok === true, sign_api: null, verify_api: 'verifySlackRequest({signingSecret, body, headers: {x-slack-signature, x-slack-request-timestamp: number}, nowMilliseconds?})' };
});

check('@slack/events-api', '@slack/events-api', 'slack v0', async () => {
  const { verifyRequestSignature } = (await import('@slack/events-api')).default;
  const ts = nowSec();
  const sig = 'v0=' + hmac('sha256', SECRET, `v0:${ts}:${BODY}`, 'hex');
  const ok = verifyRequestSignature({ signingSecret: SECRET, requestSignature: sig, requestTimestamp: ts, body: V(BODY) });
  return { headers: { 'X-Slack-Signature': sig, 'X-Slack-Request-Timestamp': String(ts) }, secret: SECRET, verified: ok === true, sign_api: null, verify_api: 'verifyRequestSignature({signingSecret, requestSignature, requestTimestamp, body})' };
});

check('webflow-api', 'webflow-api', 'webflow (ms timestamp)', async () => {
  const { WebflowClient } = await import('webflow-api');
  const client = new WebflowClient({ accessToken: 'xcheck' });
  const tsMs = String(nowMs());
  const headers = { 'x-webflow-timestamp': tsMs, 'x-webflow-signature': hmac('sha256', SECRET, `${tsMs}:${BODY}`, 'hex') };
  const ok = await client.webhooks.verifySignature({ headers, body: V(BODY), secret: SECRET });
  return { headers, secret: SECRET, verified: ok === true, sign_api: null, verify_api: 'await client.webhooks.verifySignature({headers (lower-case), body, secret})' };
});

check('chargebee', 'chargebee', 'basic auth (no signature)', async () => {
  const { basicAuthValidator } = await import('chargebee');
  const user = 'hookline', pass = SECRET;
  const headers = { authorization: 'Basic ' + Buffer.from(`${user}:${V(pass)}`).toString('base64') };
  await basicAuthValidator((u, p) => u === user && p === pass)(headers); // throws WebhookAuthenticationError
  return { headers: { Authorization: headers.authorization }, secret: `${user}:${pass}`, verified: true, sign_api: null, verify_api: 'await basicAuthValidator((user, pass) => bool)(headers)' };
});

// ================================================================= run
let failures = 0;
for (const c of checks) {
  let line;
  try {
    TAMPER = false;
    const r = await c.fn();
    line = { sdk: c.sdk, version: version(c.pkg), scheme: c.scheme, headers: r.headers, body: r.body ?? BODY, secret: r.secret, verified: r.verified === true };
    for (const [k, v] of Object.entries(r)) if (!(k in line) && k !== 'result' && k !== 'verified') line[k] = v;
  } catch (err) {
    line = { sdk: c.sdk, version: (() => { try { return version(c.pkg); } catch { return null; } })(), scheme: c.scheme, verified: false, error: String(err?.stack ?? err).split('\n').slice(0, 3).join(' | ') };
  }
  // negative control: same signature, body (or credential) changed by one byte
  try {
    TAMPER = true;
    const t = await c.fn();
    line.rejects_tampered = t.verified !== true;
  } catch (err) {
    line.rejects_tampered = true;
  } finally {
    TAMPER = false;
  }
  if (SKEW) line.skew_seconds = SKEW;
  if (!line.verified || !line.rejects_tampered) failures++;
  console.log(JSON.stringify(line));
}
if (netAttempts.length) {
  console.error(`network attempts refused: ${netAttempts.join(', ')}`);
  failures++;
}
if (SKEW) {
  console.error(`skew ${SKEW} s: ${checks.length - failures} accepted, ${failures} rejected (report only)`);
  process.exitCode = netAttempts.length ? 1 : 0;
} else {
  console.error(`${checks.length - failures} passed, ${failures} failed`);
  process.exitCode = failures ? 1 : 0;
}
