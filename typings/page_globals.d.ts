// What the page's modules (static/js, checked by TypeScript: tsconfig.json) find on the page beyond the DOM: the
// names they leave on window (the live connection, the hooks the browser tests and benchmarks read), the vendored
// Chart.js (static/vendor), and the Keyboard API's layout map where the browser has one (static/js/keys.js).
interface Window {
  studioLive?: { send: (message: object) => void };
  Chart?: any;
  reviewZoom?: () => { scale: number; ox: number; oy: number };
  reviewShowScreen?: (position: number) => Promise<void>;
  reviewHistory?: () => { past: number; future: number };
  wsZoom?: () => { scale: number; ox: number; oy: number };
  wsGoTo?: (index: number) => void;
  wsHistory?: () => { past: number; future: number };
}

interface Navigator {
  keyboard?: { getLayoutMap?: () => Promise<Map<string, string>> };
}
