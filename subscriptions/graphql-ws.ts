// graphql-ws on the Node host's own port: subscriptions only, bounded like HTTP (message size, sockets, subscriptions).
import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import {
  GraphQLError,
  Kind,
  getOperationAST,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type FieldNode,
} from 'graphql';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Caller, Role } from '../common/caller.js';
import { shareSubscriptions, type ResultWriter } from './shared-execution.js';

/** A per-key rate-limit verdict, as the HTTP limit gives it (app/rate-limit.ts); null: not limited. */
export type WsAdmission = { allowed: boolean; limit: number; windowSeconds: number; resetSeconds: number } | null;

export type GraphqlWsOptions = {
  yoga: YogaServerInstance<any, any>;
  /** the `authorization` connection param ("Bearer <key>") to a caller, undefined when unknown */
  lookupCaller: (authorization: string | undefined) => Promise<Caller | undefined>;
  /** roles allowed to subscribe */
  roles?: Role[];
  path?: string;
  isProd?: boolean;
  /** the rest of the GraphQL context (the Node host's orders and catalog), as yoga.fetch gets it over HTTP */
  context?: Record<string, unknown>;
  /** largest message a client may send, in bytes (MAX_BODY_BYTES); a larger frame closes the socket with 1009 */
  maxPayloadBytes: number;
  /** MAX_SUBSCRIPTIONS_PER_SOCKET: more on one socket are refused with TOO_MANY_SUBSCRIPTIONS */
  maxSubscriptionsPerSocket: number;
  /** MAX_SOCKETS_PER_CLIENT: open sockets per API client (server-side keys); past it 4429 */
  maxSocketsPerClient: number;
  /** MAX_SOCKETS_PER_IP: open sockets per client address on a `public` key (each browser is its own client); past it 4429 */
  maxSocketsPerIp: number;
  /** the client's address for this upgrade request (the connection, or X-Forwarded-For under TRUST_PROXY) */
  clientIp?: (req: IncomingMessage) => string | undefined;
  /** counts one connection or subscription against the caller's per-key rate limit, as HTTP requests are */
  admit?: (caller: Caller) => Promise<WsAdmission>;
};

type Extra = { caller?: Caller; owner?: string };

/**
 * An availabilityChanged result's conflation key: its SKU, from the result when the client selected `sku`, else from
 * the operation when it watches one SKU only. Undefined for anything else (never conflated): order-status events, and
 * availability of several SKUs the result cannot tell apart.
 */
export function availabilityKey(result: ExecutionResult, args: ExecutionArgs): string | undefined {
  if (result.errors) return undefined;
  const a = (result.data as { availabilityChanged?: { sku?: unknown } } | null | undefined)?.availabilityChanged;
  if (!a) return undefined;
  if (typeof a.sku === 'string') return `availability:${a.sku}`;
  const op = getOperationAST(args.document, args.operationName);
  const field = op?.selectionSet.selections.find(
    (s): s is FieldNode => s.kind === Kind.FIELD && s.name.value === 'availabilityChanged',
  );
  const arg = field?.arguments?.find((x) => x.name.value === 'skus')?.value;
  let skus: unknown;
  if (arg?.kind === Kind.VARIABLE)
    skus = (args.variableValues as Record<string, unknown> | undefined)?.[arg.name.value];
  else if (arg?.kind === Kind.LIST) skus = arg.values.map((v) => (v.kind === Kind.STRING ? v.value : null));
  else if (arg?.kind === Kind.STRING) skus = [arg.value];
  if (typeof skus === 'string') skus = [skus];
  const distinct = Array.isArray(skus) ? [...new Set(skus)] : [];
  return distinct.length === 1 && typeof distinct[0] === 'string' ? `availability:${distinct[0]}` : undefined;
}

/** Whole frames kept per shared result, one per subscription id several sockets use (past it, built per socket). */
const FRAMES_PER_RESULT = 64;

/**
 * One unmasked, unfragmented WebSocket text frame (server to client, RFC 6455 section 5.2) holding `head`, `json` and
 * a closing brace: graphql-ws's `next` message, built once as one buffer so that it goes to the socket in one write.
 */
export function textFrame(head: string, json: Buffer): Buffer {
  const headBytes = Buffer.byteLength(head);
  const n = headBytes + json.length + 1;
  const lengthBytes = n > 65535 ? 8 : n > 125 ? 2 : 0;
  const frame = Buffer.allocUnsafe(2 + lengthBytes + n);
  frame[0] = 0x81; // FIN, text
  if (lengthBytes === 0) frame[1] = n;
  else if (lengthBytes === 2) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(n), 2);
  }
  let at = 2 + lengthBytes;
  at += frame.write(head, at);
  at += json.copy(frame, at);
  frame[at] = 0x7d; // }
  return frame;
}

/** Close code for "too many" (graphql-ws uses 4429 for too many initialisation requests). */
const TOO_MANY = 4429;

const refusal = (code: string, message: string, extensions: Record<string, unknown> = {}) => [
  new GraphQLError(message, { extensions: { code, ...extensions } }),
];

/**
 * graphql-ws (graphql-transport-ws protocol) on the HTTP server's own port, bounded like HTTP: upgrades to `path`
 * (default /graphql) are handed to a `ws` server with a message size cap (a larger frame is never read: close 1009);
 * anything else is refused. The API key is checked once, in connection_init
 * (`connectionParams: { authorization: 'Bearer <key>' }`): a missing or unknown key, or a role that may not subscribe,
 * closes the socket with 4403 before any subscription; too many sockets for the client, or its rate limit spent,
 * closes it with 4429. Only subscriptions run here (queries and mutations go over HTTP, where their limits are), at
 * most `maxSubscriptionsPerSocket` at a time, each counted against the key's rate limit. Operations run through Yoga's
 * envelop (same schema, context, masked errors as HTTP); identical subscriptions of one client share one execution
 * per event. `stats()` says what it holds (sockets, subscriptions, shared executions).
 * @example const ws = attachGraphqlWs(server, { yoga, lookupCaller, ...config.live.sockets, maxPayloadBytes }); await ws.dispose()
 */
export function attachGraphqlWs(server: HttpServer, opts: GraphqlWsOptions) {
  const path = opts.path ?? '/graphql';
  const roles = opts.roles ?? ['public', 'storefront', 'admin'];
  const maxSubscriptions = opts.maxSubscriptionsPerSocket;
  // no permessage-deflate: the fan-out writes whole frames to the socket itself (nextMessage)
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxPayloadBytes, perMessageDeflate: false });
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (pathname !== path) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
  server.on('upgrade', onUpgrade);
  // identical subscriptions of one API client run once per event, whatever the number of sockets (see shared-execution)
  // availability is a state: a socket that is behind gets the newest per SKU; order-status events are never conflated
  const shared = shareSubscriptions({ conflateKey: availabilityKey });
  const shareKeys = new WeakMap<object, string>();
  const writers = new WeakMap<object, ResultWriter>();
  // a shared result is encoded once, however many sockets it is written to: its JSON, and whole frames for the ids
  // several sockets share (graphql-ws clients often number their first subscription "1")
  const encoded = new WeakMap<object, { json: Buffer; frames: Map<string, Buffer> }>();
  const nextMessage = (socket: WebSocket, id: string): ResultWriter => {
    const head = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
    return (result, done) => {
      if (socket.readyState !== socket.OPEN) return done();
      let e = encoded.get(result);
      if (e === undefined) encoded.set(result, (e = { json: Buffer.from(JSON.stringify(result)), frames: new Map() }));
      let frame = e.frames.get(head);
      if (frame === undefined) {
        frame = textFrame(head, e.json);
        if (e.frames.size < FRAMES_PER_RESULT) e.frames.set(head, frame);
      }
      // The frame goes to ws's own TCP socket in one write instead of through socket.send, which encodes the string
      // again for every socket and writes header and payload as two chunks (cork, writev): at 10,000 subscribers
      // that was a tenth of a pass (bench:fanout, pass median 276 -> 245 ms). Safe because ws writes every frame of
      // its own synchronously to that socket (no compression here, so nothing waits in ws), so frames never
      // interleave, and bytes the socket buffers count in bufferedAmount.
      const raw = (socket as unknown as { _socket?: Duplex })._socket;
      // (an open ws always has its socket; were it ever missing, ws frames the message itself)
      if (!raw) return socket.send(`${head}${e.json.toString()}}`, () => done());
      // a socket with nothing waiting in this process takes the frame at once: taken, no callback to wait for; one
      // that is behind (bytes still buffered here) says when it has taken this one
      if (socket.bufferedAmount > 0) return raw.write(frame, () => done());
      raw.write(frame);
      done();
    };
  };
  const sockets = new Map<string, number>(); // open, authenticated sockets per owner (API client, or address on a public key)
  const open = new Set<{ subscriptions: Record<string, unknown> }>();

  // Before graphql-ws's own listener: a protocol error of the client (a frame over maxPayload, invalid UTF-8...) is
  // closed by ws with its status code (1009, 1007...) without graphql-ws reporting it as an internal error.
  wss.on('connection', (socket: WebSocket) => {
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: any[]) => boolean;
    (socket as any).emit = (event: string | symbol, ...args: any[]) =>
      event === 'error' && String(args[0]?.code).startsWith('WS_ERR_') ? true : emit(event, ...args);
  });

  const release = (owner: string | undefined) => {
    if (!owner) return;
    const n = (sockets.get(owner) ?? 1) - 1;
    if (n > 0) sockets.set(owner, n);
    else sockets.delete(owner);
  };

  const disposable = useServer<
    Record<string, unknown> | undefined,
    Extra & { request: IncomingMessage; socket: WebSocket }
  >(
    {
      isProd: opts.isProd,
      execute: (args: any) => args.rootValue.execute(args),
      subscribe: (args: any) => {
        const key = shareKeys.get(args);
        return key ? shared(args, key, args.rootValue.subscribe, writers.get(args)) : args.rootValue.subscribe(args);
      },
      onConnect: async (ctx) => {
        const auth = ctx.connectionParams?.authorization;
        const found = await opts.lookupCaller(typeof auth === 'string' ? auth : undefined);
        if (!found || !roles.includes(found.role)) return false; // graphql-ws closes with 4403 Forbidden
        const ip = opts.clientIp?.(ctx.extra.request);
        const caller: Caller = ip ? { ...found, ip } : found;
        const admitted = await opts.admit?.(caller);
        if (admitted && !admitted.allowed) {
          ctx.extra.socket.close(TOO_MANY, `Rate limit of ${admitted.limit} per ${admitted.windowSeconds}s exceeded`);
          return false;
        }
        const perIp = caller.role === 'public';
        const owner = perIp ? `ip:${ip ?? 'unknown'}` : `client:${caller.clientId}`;
        const max = perIp ? opts.maxSocketsPerIp : opts.maxSocketsPerClient;
        if ((sockets.get(owner) ?? 0) >= max) {
          ctx.extra.socket.close(
            TOO_MANY,
            perIp ? 'Too many sockets from this address' : 'Too many sockets for this API client',
          );
          return false;
        }
        sockets.set(owner, (sockets.get(owner) ?? 0) + 1);
        ctx.extra.owner = owner;
        ctx.extra.caller = caller;
        open.add(ctx);
        return true;
      },
      onClose: (ctx) => {
        open.delete(ctx);
        release(ctx.extra.owner);
        ctx.extra.owner = undefined;
      },
      onSubscribe: async (ctx, id, params) => {
        // graphql-ws has already registered this id, so the count includes it
        if (Object.keys(ctx.subscriptions).length > maxSubscriptions)
          return refusal(
            'TOO_MANY_SUBSCRIPTIONS',
            `at most ${maxSubscriptions} subscriptions per socket; complete one or open another socket`,
          );
        const admitted = ctx.extra.caller && (await opts.admit?.(ctx.extra.caller));
        if (admitted && !admitted.allowed)
          return refusal(
            'RATE_LIMITED',
            `rate limit of ${admitted.limit} requests per ${admitted.windowSeconds}s exceeded for this API key`,
            {
              retryAfterSeconds: admitted.resetSeconds,
            },
          );
        const { schema, execute, subscribe, contextFactory, parse, validate } = opts.yoga.getEnveloped({
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
          ...opts.context,
          caller: ctx.extra.caller,
        });
        let document: DocumentNode;
        try {
          document = parse(params.query);
        } catch (err) {
          return [err as any];
        }
        const operation = getOperationAST(document, params.operationName)?.operation;
        if (operation !== 'subscription')
          return refusal(
            'SUBSCRIPTIONS_ONLY',
            'only subscriptions are served over graphql-ws: send queries and mutations to POST /graphql',
          );
        const errors = validate(schema, document);
        if (errors.length) return errors;
        const args: ExecutionArgs = {
          schema,
          operationName: params.operationName,
          document,
          variableValues: params.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe },
        };
        shareKeys.set(
          args,
          JSON.stringify([
            params.query,
            params.operationName ?? null,
            params.variables ?? null,
            ctx.extra.caller?.clientId,
          ]),
        );
        // each result is written to this socket as graphql-ws's `next` for this id, straight from the shared
        // execution's queue (one call per subscriber and result, instead of graphql-ws's promise chain per message)
        writers.set(args, nextMessage(ctx.extra.socket, id));
        return args;
      },
    },
    wss,
  );

  return {
    /** what this server holds now: open sockets, their subscriptions, and the shared executions behind them */
    stats: () => ({
      sockets: wss.clients.size,
      subscriptions: [...open].reduce((n, ctx) => n + Object.keys(ctx.subscriptions).length, 0),
      sharedExecutions: shared.size(),
    }),
    async dispose() {
      server.off('upgrade', onUpgrade);
      await disposable.dispose();
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}
