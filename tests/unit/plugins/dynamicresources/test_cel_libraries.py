"""The CEL libraries of upstream's 1.36 environment (issue 23 #5), checked
against their documented examples: cel-go's ext.Sets, ext.Lists (v3),
ext.TwoVarComprehensions and ext.Strings (v2) (here cel-cpp's own
extensions), and Kubernetes' ``lists``, ``IP``, ``CIDR``, ``URLs`` and ``Regex``
libraries (k8s.io/apiserver v0.36.2 pkg/cel/library/{lists,ip,cidr,urls,regex}.go
doc comments;
where a comment and the code disagree, the code: a CIDR keeps host bits),
on a device's attributes too."""

from __future__ import annotations

import pytest

from plugins.dynamicresources.cel import CelDevice, SelectorError
from tests.unit.plugins.dynamicresources.fakes import steady_cel

ENV = steady_cel()
DEVICE = CelDevice(
    "gpu.example.com",
    {
        "model": {"string": "A100"},
        "numa": {"int": 1},
        "cores": {"int": 96},
        "address": {"string": "10.1.2.3"},
    },
    {},
)


@pytest.mark.parametrize(
    "expression",
    [
        # ext.Sets
        pytest.param("sets.contains([1, 2, 3, 4], [2, 3])", id="sets.contains"),
        pytest.param("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", id="sets.contains numeric"),
        pytest.param("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", id="sets.equivalent"),
        pytest.param("sets.intersects([1], [1, 2])", id="sets.intersects"),
        pytest.param("!sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]]) == false", id="nested"),
        # ext.Lists
        pytest.param("[1, 2, 3, 4].slice(1, 3) == [2, 3]", id="lists slice"),
        pytest.param("[1, [2, 3], [4]].flatten() == [1, 2, 3, 4]", id="lists flatten"),
        pytest.param("lists.range(4) == [0, 1, 2, 3]", id="lists.range"),
        pytest.param("[1, 2, 2, 3].distinct() == [1, 2, 3]", id="lists distinct"),
        pytest.param("[5, 3, 1].reverse() == [1, 3, 5]", id="lists reverse"),
        pytest.param("[3, 2, 1].sort() == [1, 2, 3]", id="lists sort"),
        pytest.param('["b", "a", "c"].sortBy(x, x) == ["a", "b", "c"]', id="lists sortBy"),
        pytest.param("[1, 2, 3].first() == optional.of(1)", id="lists first (v3)"),
        # ext.TwoVarComprehensions
        pytest.param("[1, 2, 3].all(i, v, i < v)", id="two-variable all"),
        pytest.param("{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)", id="two-variable exists"),
        pytest.param("[1, 2].existsOne(i, v, i == 0 && v == 1)", id="two-variable existsOne"),
        pytest.param("[1, 2].transformList(i, v, v * 2) == [2, 4]", id="transformList"),
        # ext.Strings v2
        pytest.param(
            "'%d devices on %s'.format([2, 'node-1']) == '2 devices on node-1'", id="format"
        ),
        pytest.param("'a,b'.split(',') == ['a', 'b'] && 'AB'.lowerAscii() == 'ab'", id="strings"),
        # Kubernetes lists
        pytest.param("[1, 2, 3].isSorted()", id="isSorted"),
        pytest.param("['a', 'b', 'b', 'c'].isSorted()", id="isSorted strings"),
        pytest.param("![2.0, 1.0].isSorted()", id="isSorted false"),
        pytest.param("[1].isSorted() && [].isSorted()", id="isSorted short"),
        pytest.param("[1, 3].sum() == 4", id="sum"),
        pytest.param("[1.0, 3.0].sum() == 4.0", id="sum doubles"),
        pytest.param("[].sum() == 0", id="sum empty"),
        pytest.param("[1, 3].min() == 1 && [1, 3].max() == 3 && [1].min() == 1", id="min max"),
        pytest.param("[1, 2, 2, 3].indexOf(2) == 1", id="indexOf"),
        pytest.param("['a', 'b', 'b', 'c'].lastIndexOf('b') == 2", id="lastIndexOf"),
        pytest.param("[1.0].indexOf(1.1) == -1 && [].indexOf('string') == -1", id="indexOf absent"),
        pytest.param("'abc'.indexOf('c') == 2", id="strings indexOf kept"),
        # Kubernetes IP
        pytest.param("isIP('127.0.0.1') && isIP('::1')", id="isIP"),
        pytest.param("!isIP('127.0.0.256') && !isIP(':::1')", id="isIP invalid"),
        pytest.param("!isIP('::ffff:1.2.3.4') && !isIP('fe80::1%eth0')", id="isIP mapped, zone"),
        pytest.param("!isIP('127.0.0.01')", id="isIP leading zero"),
        pytest.param("ip.isCanonical('127.0.0.1') && ip.isCanonical('2001:db8::abcd')", id="canon"),
        pytest.param(
            "!ip.isCanonical('2001:DB8::ABCD') && !ip.isCanonical('2001:db8::0:0:0:abcd')",
            id="not canonical",
        ),
        pytest.param("ip('127.0.0.1').family() == 4 && ip('::1').family() == 6", id="family"),
        pytest.param(
            "ip('0.0.0.0').isUnspecified() && !ip('127.0.0.1').isUnspecified()"
            " && ip('::').isUnspecified() && !ip('::1').isUnspecified()",
            id="isUnspecified",
        ),
        pytest.param(
            "ip('127.0.0.1').isLoopback() && !ip('192.168.0.1').isLoopback()"
            " && ip('::1').isLoopback() && !ip('2001:db8::abcd').isLoopback()",
            id="isLoopback",
        ),
        pytest.param(
            "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast()"
            " && ip('ff02::1').isLinkLocalMulticast() && !ip('fd00::1').isLinkLocalMulticast()",
            id="isLinkLocalMulticast",
        ),
        pytest.param(
            "ip('169.254.169.254').isLinkLocalUnicast() && !ip('192.168.0.1').isLinkLocalUnicast()"
            " && ip('fe80::1').isLinkLocalUnicast() && !ip('fd80::1').isLinkLocalUnicast()",
            id="isLinkLocalUnicast",
        ),
        pytest.param(
            "ip('192.168.0.1').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast()"
            " && ip('2001:db8::abcd').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()",
            id="isGlobalUnicast",
        ),
        pytest.param("string(ip('2001:DB8::1')) == '2001:db8::1'", id="string(ip)"),
        pytest.param("ip('::1') == ip('0:0::1')", id="ip equality"),
        # Kubernetes CIDR
        pytest.param("isCIDR('192.168.0.0/16') && isCIDR('::1/128')", id="isCIDR"),
        pytest.param("!isCIDR('192.168.0.0/33') && !isCIDR('::1/129')", id="isCIDR invalid"),
        pytest.param(
            "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))"
            " && !cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))"
            " && cidr('192.168.0.0/24').containsIP('192.168.0.1')"
            " && !cidr('192.168.0.0/24').containsIP('192.168.1.1')",
            id="containsIP",
        ),
        pytest.param(
            "cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))"
            " && !cidr('192.168.1.0/24').containsCIDR(cidr('192.168.2.0/24'))"
            " && cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')"
            " && !cidr('192.168.1.0/24').containsCIDR('192.168.2.0/24')",
            id="containsCIDR",
        ),
        pytest.param(
            "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')"
            " && cidr('192.168.0.1/24').ip().family() == 4 && cidr('::1/128').ip().family() == 6",
            id="cidr ip",
        ),
        pytest.param(
            "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')"
            " && cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()"
            " && cidr('192.168.0.1/24') != cidr('192.168.0.1/24').masked()",
            id="masked",
        ),
        pytest.param(
            "cidr('192.168.0.0/16').prefixLength() == 16 && cidr('::1/128').prefixLength() == 128",
            id="prefixLength",
        ),
        pytest.param("string(cidr('192.168.0.1/24')) == '192.168.0.1/24'", id="string(cidr)"),
        # Kubernetes URLs
        pytest.param(
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')"
            " && isURL('/absolute-path')",
            id="isURL",
        ),
        pytest.param("!isURL('https://a:b:c/') && !isURL('../relative-path')", id="isURL invalid"),
        pytest.param(
            "url('/path').getScheme() == '' && url('https://example.com/').getScheme() == 'https'",
            id="getScheme",
        ),
        pytest.param(
            "url('https://example.com:80/').getHost() == 'example.com:80'"
            " && url('https://example.com/').getHost() == 'example.com'"
            " && url('https://[::1]:80/').getHost() == '[::1]:80'"
            " && url('https://[::1]/').getHost() == '[::1]' && url('/path').getHost() == ''",
            id="getHost",
        ),
        pytest.param(
            "url('https://example.com:80/').getHostname() == 'example.com'"
            " && url('https://127.0.0.1:80/').getHostname() == '127.0.0.1'"
            " && url('https://[::1]:80/').getHostname() == '::1'"
            " && url('/path').getHostname() == ''",
            id="getHostname",
        ),
        pytest.param(
            "url('https://example.com:80/').getPort() == '80'"
            " && url('https://example.com/').getPort() == '' && url('/path').getPort() == ''",
            id="getPort",
        ),
        pytest.param(
            "url('https://example.com/path').getEscapedPath() == '/path'"
            " && url('https://example.com/path with spaces/').getEscapedPath()"
            " == '/path%20with%20spaces/'"
            " && url('https://example.com').getEscapedPath() == ''",
            id="getEscapedPath",
        ),
        pytest.param(
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()"
            " == {'k1': ['a'], 'k2': ['b', 'c']}"
            " && url('https://example.com/path?key with spaces=value with spaces').getQuery()"
            " == {'key with spaces': ['value with spaces']}"
            " && url('https://example.com/path?').getQuery() == {}"
            " && url('https://example.com/path').getQuery() == {}",
            id="getQuery",
        ),
        # Kubernetes Regex (the doc's '[0-9]*' examples assume no empty
        # matches; Go's FindString/FindAllString give them, so '+' here)
        pytest.param("'abc 123'.find('[0-9]+') == '123'", id="find"),
        pytest.param("'abc 123'.find('xyz') == ''", id="find no match"),
        pytest.param("'123 abc 456'.findAll('[0-9]+') == ['123', '456']", id="findAll"),
        pytest.param("'123 abc 456'.findAll('[0-9]+', 1) == ['123']", id="findAll limit"),
        pytest.param("'123 abc 456'.findAll('xyz') == []", id="findAll no match"),
        pytest.param(
            "'a1'.findAll('[0-9]*') == ['', '1']",
            id="findAll: Go's empty matches, none right after a match",
        ),
        pytest.param(
            "'a'.find('(a+)+$') == 'a'"
            " && 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab'.find('(a+)+$') == ''",
            id="find is linear on a pattern that makes backtracking engines explode",
        ),
        # on a device
        pytest.param(
            'sets.contains(["A100", "H100"], [device.attributes["gpu.example.com"].model])',
            id="a device attribute in a set",
        ),
        pytest.param(
            '[device.attributes["gpu.example.com"].numa, 3].isSorted()'
            ' && device.attributes["gpu.example.com"].cores > 95.5',
            id="lists and a cross-type comparison on attributes",
        ),
        pytest.param(
            'cidr("10.0.0.0/8").containsIP(device.attributes["gpu.example.com"].address)',
            id="a device's address in a network",
        ),
    ],
)
def test_upstream_library_examples_hold(expression: str) -> None:
    assert ENV.compile(expression).matches(DEVICE) is True


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("[].min() == 0", "min called on empty list", id="min of an empty list"),
        pytest.param("[].max() == 0", "max called on empty list", id="max of an empty list"),
        pytest.param(
            "ip('127.0.0.256').family() == 4",
            'IP Address "127.0.0.256" parse error during conversion from string',
            id="ip of an invalid address",
        ),
        pytest.param(
            "ip('::ffff:1.2.3.4').family() == 6",
            'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed',
            id="ip of an IPv4-mapped address",
        ),
        pytest.param("'x'.find('(') == ''", "error parsing regexp", id="find with a bad pattern"),
        pytest.param(
            "url('../relative-path').getScheme() == ''",
            "URL parse error during conversion from string",
            id="url of a relative path",
        ),
        pytest.param(
            "cidr('192.168.0.0/33').prefixLength() == 33",
            "network address parse error during conversion from string",
            id="cidr of an invalid prefix",
        ),
    ],
)
def test_upstream_library_errors(expression: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message):
        ENV.compile(expression).matches(DEVICE)
