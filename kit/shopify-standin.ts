// A local stand-in for Shopify's Admin GraphQL API, only what a SHOPIFY channel calls (channels/marketplace-client.ts):
// inventoryItems by SKU with their available quantity, inventorySetQuantities with changeFromQuantity (compare-and-set)
// and @idempotent(key:), and orderCancel. It answers with the bodies and user-error codes Shopify documents
// (CHANGE_FROM_QUANTITY_STALE, IDEMPOTENCY_KEY_PARAMETER_MISMATCH, THROTTLED). For tests and the bench only.
import http from 'node:http';

export type ShopifyStandIn = {
  url: string;
  /** the Admin GraphQL endpoint a SHOPIFY channel uses */
  endpoint: string;
  token: string;
  available(sku: string): number | undefined;
  /** the shop sells units on its own (so lastunit's next compare-and-set is stale) */
  sell(sku: string, n: number): void;
  /** answer the next `n` calls THROTTLED */
  throttle(n: number): void;
  stats(): { sets: number; stale: number; replays: number; mismatches: number; throttled: number; cancels: string[] };
  close(): Promise<void>;
};

export async function startShopifyStandIn(opts: { token?: string; skus?: string[] } = {}): Promise<ShopifyStandIn> {
  const token = opts.token ?? 'shpat_standin_token';
  const location = 'gid://shopify/Location/1';
  const items = new Map<string, { id: string; available: number }>();
  let nextItem = 1001;
  const itemOf = (sku: string) => {
    let it = items.get(sku);
    if (!it) items.set(sku, (it = { id: `gid://shopify/InventoryItem/${nextItem++}`, available: 0 }));
    return it;
  };
  for (const sku of opts.skus ?? []) itemOf(sku);
  const keys = new Map<string, { input: string; answer: unknown }>();
  const stats = { sets: 0, stale: 0, replays: 0, mismatches: 0, throttled: 0, cancels: [] as string[] };
  let throttleNext = 0;

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || !/\/admin\/api\/[0-9-]+\/graphql\.json$/.test(req.url ?? ''))
        return send(404, { errors: 'Not Found' });
      if (req.headers['x-shopify-access-token'] !== token)
        return send(401, { errors: '[API] Invalid API key or access token (unrecognized login or wrong password)' });
      if (throttleNext > 0) {
        throttleNext--;
        stats.throttled++;
        return send(200, {
          errors: [
            {
              message: 'Throttled',
              extensions: { code: 'THROTTLED', documentation: 'https://shopify.dev/api/usage/rate-limits' },
            },
          ],
        });
      }
      const { query, variables } = JSON.parse(raw || '{}') as { query: string; variables: any };
      if (/inventoryItems\s*\(/.test(query)) {
        const sku = /^sku:"?(.*?)"?$/.exec(String(variables?.query ?? ''))?.[1] ?? '';
        const it = items.get(sku);
        return send(200, {
          data: {
            locations: { nodes: [{ id: location }] },
            inventoryItems: {
              nodes: it
                ? [
                    {
                      id: it.id,
                      inventoryLevels: {
                        nodes: [
                          { location: { id: location }, quantities: [{ name: 'available', quantity: it.available }] },
                        ],
                      },
                    },
                  ]
                : [],
            },
          },
        });
      }
      if (/inventorySetQuantities\s*\(/.test(query)) {
        if (!/@idempotent\s*\(\s*key:/.test(query))
          return send(200, {
            errors: [
              {
                message: 'The @idempotent directive is required for this mutation.',
                extensions: { code: 'BAD_REQUEST' },
              },
            ],
          });
        const key = String(variables?.key ?? '');
        const input = JSON.stringify(variables?.input);
        const seen = keys.get(key);
        if (seen) {
          if (seen.input !== input) {
            stats.mismatches++;
            return send(200, {
              data: {
                inventorySetQuantities: {
                  inventoryAdjustmentGroup: null,
                  userErrors: [
                    {
                      code: 'IDEMPOTENCY_KEY_PARAMETER_MISMATCH',
                      field: null,
                      message: 'The same idempotency key cannot be used with different operation parameters.',
                    },
                  ],
                },
              },
            });
          }
          stats.replays++;
          return send(200, seen.answer);
        }
        const q = variables?.input?.quantities?.[0];
        const it = [...items.values()].find((x) => x.id === q?.inventoryItemId);
        let answer: unknown;
        if (!it) {
          answer = {
            data: {
              inventorySetQuantities: {
                inventoryAdjustmentGroup: null,
                userErrors: [
                  {
                    code: 'INVALID_INVENTORY_ITEM',
                    field: ['input', 'quantities', '0', 'inventoryItemId'],
                    message: 'The specified inventory item could not be found.',
                  },
                ],
              },
            },
          };
        } else if (q.changeFromQuantity !== null && q.changeFromQuantity !== it.available) {
          stats.stale++;
          answer = {
            data: {
              inventorySetQuantities: {
                inventoryAdjustmentGroup: null,
                userErrors: [
                  {
                    code: 'CHANGE_FROM_QUANTITY_STALE',
                    field: ['input', 'quantities', '0', 'changeFromQuantity'],
                    message: 'The changeFromQuantity value does not match persisted value.',
                  },
                ],
              },
            },
          };
        } else {
          it.available = q.quantity;
          stats.sets++;
          answer = {
            data: {
              inventorySetQuantities: {
                inventoryAdjustmentGroup: { id: `gid://shopify/InventoryAdjustmentGroup/${stats.sets}` },
                userErrors: [],
              },
            },
          };
        }
        keys.set(key, { input, answer });
        return send(200, answer);
      }
      if (/orderCancel\s*\(/.test(query)) {
        stats.cancels.push(String(variables?.orderId));
        return send(200, {
          data: {
            orderCancel: { job: { id: `gid://shopify/Job/${stats.cancels.length}` }, orderCancelUserErrors: [] },
          },
        });
      }
      send(200, { errors: [{ message: 'unsupported by the stand-in', extensions: { code: 'BAD_REQUEST' } }] });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url,
    endpoint: `${url}/admin/api/2025-10/graphql.json`,
    token,
    available: (sku) => items.get(sku)?.available,
    sell: (sku, n) => {
      const it = itemOf(sku);
      it.available = Math.max(0, it.available - n);
    },
    throttle: (n) => {
      throttleNext = n;
    },
    stats: () => ({ ...stats, cancels: [...stats.cancels] }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
