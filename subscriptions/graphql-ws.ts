import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import type { ExecutionArgs } from 'graphql';
import type { YogaServerInstance } from 'graphql-yoga';
import type { Caller, Role } from '../common/caller.js';
import { shareSubscriptions } from './shared-execution.js';
import { encodeOnce } from './encode-once.js';

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
};

type Extra = { caller?: Caller };

/**
 * graphql-ws (graphql-transport-ws protocol) on the HTTP server's own port: upgrades to `path` (default /graphql) are
 * handed to a `ws` server; anything else is refused. The API key is checked once, in connection_init
 * (`connectionParams: { authorization: 'Bearer <key>' }`): a missing or unknown key, or a role that may not subscribe,
 * closes the socket with 4403 before any subscription. Operations run through Yoga's envelop (same schema, context,
 * masked errors as HTTP); identical subscriptions of one client share one execution per event.
 * @example const dispose = attachGraphqlWs(server, { yoga, lookupCaller })
 */
export function attachGraphqlWs(server: HttpServer, opts: GraphqlWsOptions) {
  const path = opts.path ?? '/graphql';
  const roles = opts.roles ?? ['storefront', 'admin'];
  const wss = new WebSocketServer({ noServer: true });
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
  const shared = shareSubscriptions();
  const shareKeys = new WeakMap<object, string>();
  const encoder = encodeOnce();
  wss.on('connection', encoder.wrap); // before graphql-ws's own listener: its sends go through the encoder

  const disposable = useServer<Record<string, unknown> | undefined, Extra>(
    {
      isProd: opts.isProd,
      onNext: encoder.onNext,
      jsonMessageReplacer: encoder.replacer,
      execute: (args: any) => args.rootValue.execute(args),
      subscribe: (args: any) => {
        const key = shareKeys.get(args);
        return key ? shared(args, key, args.rootValue.subscribe) : args.rootValue.subscribe(args);
      },
      onConnect: async (ctx) => {
        const auth = ctx.connectionParams?.authorization;
        const caller = await opts.lookupCaller(typeof auth === 'string' ? auth : undefined);
        if (!caller || !roles.includes(caller.role)) return false; // graphql-ws closes with 4403 Forbidden
        ctx.extra.caller = caller;
        return true;
      },
      onSubscribe: async (ctx, _id, params) => {
        const { schema, execute, subscribe, contextFactory, parse, validate } = opts.yoga.getEnveloped({
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
          ...opts.context,
          caller: ctx.extra.caller,
        });
        let document;
        try {
          document = parse(params.query);
        } catch (err) {
          return [err as any];
        }
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
        shareKeys.set(args, JSON.stringify([params.query, params.operationName ?? null, params.variables ?? null, ctx.extra.caller?.clientId]));
        return args;
      },
    },
    wss,
  );

  return async () => {
    server.off('upgrade', onUpgrade);
    await disposable.dispose();
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  };
}
