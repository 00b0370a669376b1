/**
 * aws-local-stepfunctions 3 targets Node 22 and calls Promise.withResolvers (ES2024) when running
 * Task states. stepthread supports Node 22.12 and later, where this does nothing; on an older Node
 * (npm warns about its engines) a run still works instead of failing at its first Task with a
 * TypeError. Import this module before aws-local-stepfunctions.
 */
interface Resolvers<T> {
  promise: Promise<T>;
  resolve: (value: T | PromiseLike<T>) => void;
  reject: (reason?: unknown) => void;
}

const PromiseWithResolvers = Promise as PromiseConstructor & { withResolvers?: <T>() => Resolvers<T> };

if (typeof PromiseWithResolvers.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>(this: PromiseConstructor): Resolvers<T> {
      let resolve!: Resolvers<T>['resolve'];
      let reject!: Resolvers<T>['reject'];
      const promise = new this<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

export {};
