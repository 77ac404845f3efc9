'use strict';

const assert = require('node:assert/strict');
const { parse } = require('../lib/kubernetes/yaml');

// A kubeconfig as kubectl writes it: sequences at their key's indentation, `{}` for empty values.
const KUBECTL_CONFIG = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTi==
    server: https://127.0.0.1:6443
  name: kind-kind
- cluster:
    insecure-skip-tls-verify: true
    server: https://[::1]:8443/k8s/clusters/c-1
  name: other
contexts:
- context:
    cluster: kind-kind
    namespace: web
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: QUJD
    client-key-data: REVG
`;

describe('yaml', () => {
  it('reads a kubeconfig as kubectl writes it', () => {
    assert.deepEqual(parse(KUBECTL_CONFIG), {
      apiVersion: 'v1',
      clusters: [
        { cluster: { 'certificate-authority-data': 'LS0tLS1CRUdJTi==', server: 'https://127.0.0.1:6443' }, name: 'kind-kind' },
        { cluster: { 'insecure-skip-tls-verify': true, server: 'https://[::1]:8443/k8s/clusters/c-1' }, name: 'other' }
      ],
      contexts: [{ context: { cluster: 'kind-kind', namespace: 'web', user: 'kind-kind' }, name: 'kind-kind' }],
      'current-context': 'kind-kind',
      kind: 'Config',
      preferences: {},
      users: [{ name: 'kind-kind', user: { 'client-certificate-data': 'QUJD', 'client-key-data': 'REVG' } }]
    });
  });

  it('reads any JSON text, over many lines', () => {
    const value = { a: [1, -2.5, { b: null, c: true }], 'd e': 'x\u00e9\n"q"', f: {}, g: [] };
    assert.deepEqual(parse(JSON.stringify(value, null, 2)), value);
    assert.deepEqual(parse(JSON.stringify(value)), value);
    assert.deepEqual(parse('[1, "two", [3]]'), [1, 'two', [3]]);
  });

  it('reads plain scalars by the core schema', () => {
    const cases = [
      ['a: 42', 42], ['a: -7', -7], ['a: 0x1f', 31], ['a: 1.5e3', 1500], ['a: true', true], ['a: False', false],
      ['a: ~', null], ['a: null', null], ['a:', null], ['a: 012abc', '012abc'], ['a: https://h:6443/p?x=1#frag', 'https://h:6443/p?x=1#frag'],
      ['a: it\'s', "it's"], ['a: -x', '-x'], ['a: yes', 'yes']
    ];
    for (const [text, expected] of cases) assert.deepEqual(parse(text), { a: expected }, text);
  });

  it('reads quoted scalars, their escapes, and quoted keys', () => {
    assert.deepEqual(parse(`a: "tab\\there \\u00e9 \\x41 \\"q\\" #not"\nb: 'it''s # not'\n"c d": 1\n'e': "" # a comment`),
      { a: 'tab\there é A "q" #not', b: "it's # not", 'c d': 1, e: '' });
    assert.deepEqual(parse('a: "two\n  lines"\nb: \'one\n\n  two\''), { a: 'two lines', b: 'one\ntwo' });
  });

  it('drops comments, blank lines and document markers', () => {
    assert.deepEqual(parse('%YAML 1.2\n---\n# top\na: 1 # one\n\n  # indented\nb: x#y\n...\n# after'), { a: 1, b: 'x#y' });
    assert.equal(parse(''), null);
    assert.equal(parse('# only a comment\n'), null);
  });

  it('reads block literals, as an inline certificate is written', () => {
    const text = 'cert: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n    indented\n\n  -----END CERTIFICATE-----\nnext: 1\n';
    assert.deepEqual(parse(text), { cert: '-----BEGIN CERTIFICATE-----\nMIIB\n  indented\n\n-----END CERTIFICATE-----\n', next: 1 });
    assert.deepEqual(parse('a: |-\n  x\n  y\n\nb: >\n  folded\n  text\n\n  para\n'), { a: 'x\ny', b: 'folded text\npara\n' });
    assert.deepEqual(parse('a: |+\n  x\n\nb: 1'), { a: 'x\n\n', b: 1 });
  });

  it('reads nested sequences and mappings in sequences, indented or not', () => {
    assert.deepEqual(parse('- - a\n  - b\n- c\n-\n  d: 1\n- e: 2\n  f:\n  - 3\n'), [['a', 'b'], 'c', { d: 1 }, { e: 2, f: [3] }]);
    assert.deepEqual(parse('a:\n  - 1\n  - [2, {x: y}]\nb: {k: [v, "w"], "q": 1}'), { a: [1, [2, { x: 'y' }]], b: { k: ['v', 'w'], q: 1 } });
  });

  it('goes on with a plain scalar over more indented lines', () => {
    assert.deepEqual(parse('a: one\n  two\n  three\nb: 1'), { a: 'one two three', b: 1 });
  });

  it('keeps a key named __proto__ as a key', () => {
    const value = parse('__proto__:\n  polluted: 1\n');
    assert.deepEqual(Object.keys(value), ['__proto__']);
    assert.equal({}.polluted, undefined);
    assert.equal(Object.getPrototypeOf(value), Object.prototype);
  });

  it('says on which line a mistake is', () => {
    const cases = [
      ['a: 1\nb: [1, 2\n', /^line 2: a flow collection is not closed$/],
      ['a: 1\n\tb: 2', /^line 2: a tab in indentation$/],
      ['a: 1\na: 2', /^line 2: duplicate key "a"$/],
      ['a:\n  b: 1\n c: 2', /^line 3: unexpected indentation/],
      ['a: b: c', /^line 1: a value may not hold ": " unquoted/],
      ['a: 1\n---\nb: 2', /^line 3: more than one document$/],
      ['a: &anchor 1', /^line 1: anchors, aliases and tags are not supported$/],
      ['a: "open\nb: 1', /^line 1: a quoted scalar is not closed$/],
      ['a: "bad \\q"', /^line 1: an unknown escape "\\q"$/],
      ['a: 1\n- b', /^line 2: unexpected "- b"/],
      ['a: "x" y', /^line 1: unexpected "y" after a value$/],
      ['just text\nkey: value', /^line 1: a value may not hold/]
    ];
    for (const [text, message] of cases) {
      assert.throws(() => parse(text), (err) => err.code === 'LILA_ERR_CONFIG' && message.test(err.message), JSON.stringify(text));
    }
  });
});
