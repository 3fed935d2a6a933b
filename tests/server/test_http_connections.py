"""HTTP connections that do nothing, or trickle, hold no worker (the QA round's item 4: 64 slow
connections, or 500 idle keep-alive ones, made every HTTP request wait 30 s and time out).
The server runs with 2 workers, so that a handful of such connections would have locked it out
when each held a thread."""
import http.client
import json
import socket
import threading
import time
import unittest

from harness import Server, free_port, wait_until


def translate(port, timeout):
    """The status of one /v1/translate on a connection of its own, within `timeout` seconds."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/v1/translate", json.dumps({"contents": ["A dog runs."]}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def closed_by_peer(sock, timeout):
    """True when the server closes `sock` (EOF or reset) within `timeout` seconds."""
    sock.settimeout(timeout)
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


class IdleAndSlowConnections(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(f"--http_port={free_port()}", "--http_threads=2",
                            "--http_max_connections=1200", "--http_idle_seconds=60",
                            "--http_request_seconds=60")
        cls.port = cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_idle_and_trickling_connections_do_not_hold_up_a_client(self):
        idle = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(800)]
        slow = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(200)]
        stop = threading.Event()

        def trickle():
            request = b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: a\r\n" * 100
            for byte in request:
                for sock in slow:
                    try:
                        sock.sendall(bytes([byte]))
                    except OSError:
                        pass
                if stop.wait(0.2):
                    return

        trickler = threading.Thread(target=trickle)
        trickler.start()
        try:
            time.sleep(1)
            # 1,000 connections doing nothing useful, 2 workers: a client is still answered (with
            # a thread per connection it waited for them to time out, or for ever).
            for _ in range(5):
                self.assertEqual(translate(self.port, timeout=10), 200)
        finally:
            stop.set()
            trickler.join()
            for sock in idle + slow:
                sock.close()

    def test_past_the_cap_a_connection_is_refused_not_queued(self):
        held = [socket.create_connection(("127.0.0.1", self.port)) for _ in range(1200)]
        try:
            extra = socket.create_connection(("127.0.0.1", self.port))
            self.assertTrue(closed_by_peer(extra, 10), "the 1,201st connection stayed open")
            extra.close()
        finally:
            for sock in held:
                sock.close()
        # Room again once they are gone.
        self.assertTrue(wait_until(lambda: self.answers(), 10))

    def answers(self):
        try:
            return translate(self.port, timeout=10) == 200
        except OSError:
            return False


class ConnectionDeadlines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(f"--http_port={free_port()}", "--http_idle_seconds=1",
                            "--http_request_seconds=2")
        cls.port = cls.server.http_port

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_an_idle_connection_is_closed_after_the_idle_limit(self):
        sock = socket.create_connection(("127.0.0.1", self.port))
        self.assertTrue(closed_by_peer(sock, 10))
        sock.close()

    def test_a_keep_alive_connection_serves_requests_then_closes_when_idle(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        for _ in range(3):
            connection.request("GET", "/v1/models")
            response = connection.getresponse()
            response.read()
            self.assertEqual(response.status, 200)
        self.assertTrue(closed_by_peer(connection.sock, 10))
        connection.close()

    def test_a_request_trickled_past_its_limit_gets_408(self):
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n")
        received = b""
        sock.settimeout(10)
        try:
            # A header line every half second: never idle, never done.
            for _ in range(40):
                sock.sendall(b"X-Pad: a\r\n")
                time.sleep(0.5)
        except OSError:
            pass
        try:
            while chunk := sock.recv(4096):
                received += chunk
        except OSError:
            pass
        sock.close()
        self.assertTrue(received.startswith(b"HTTP/1.1 408"), received)
        self.assertIn(b"not sent in full within 2 s", received)

    def answer_to(self, header, *body_parts):
        """The first bytes the server answers a /v1/translate POST with `header` (lines after
        the request line) and `body_parts`; sending stops where the server closes."""
        sock = socket.create_connection(("127.0.0.1", self.port))
        try:
            sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\n" + header + b"\r\n")
            for part in body_parts:
                sock.sendall(part)
        except OSError:
            pass
        sock.settimeout(10)
        answer = sock.recv(4096)
        sock.close()
        return answer

    def test_a_body_over_the_limit_is_refused_before_it_is_sent(self):
        answer = self.answer_to(b"Content-Length: 1000000000\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer)
        self.assertIn(b"--max_receive_message_bytes", answer)

    def test_a_chunked_body_over_the_limit_is_refused(self):
        chunk = b"x" * (1 << 20)
        # 5 MiB, past the 4 MiB default.
        answer = self.answer_to(b"Transfer-Encoding: chunked\r\n",
                                *[b"%x\r\n" % len(chunk) + chunk + b"\r\n"] * 5, b"0\r\n\r\n")
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer)

    def test_json_sent_as_curl_sends_it_is_read_as_json(self):
        # curl -d labels its body application/x-www-form-urlencoded.
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request("POST", "/v1/translate", json.dumps({"contents": ["A dog runs."]}),
                           {"Content-Type": "application/x-www-form-urlencoded"})
        response = connection.getresponse()
        body = json.loads(response.read())
        connection.close()
        self.assertEqual(response.status, 200, body)
        self.assertEqual(len(body["translations"]), 1)

    def test_head_answers_a_get_route_without_its_body(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        connection.request("HEAD", "/v1/models")
        response = connection.getresponse()
        self.assertEqual(response.status, 200)
        self.assertEqual(response.read(), b"")
        connection.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
