"""The page at GET / on the HTTP port, driven in a real browser (Debian's headless Chromium
through Selenium and chromedriver): it lists the served languages, and text typed into it comes
back translated as the gRPC service translates it, with the alignment shown on hover; a file
chosen in it goes through a document job, its progress shown, and comes back as a download of
the file TranslateDocument gives. With XLATE_SCREENSHOT=PATH it saves screenshots there
(PATH, and PATH with "_file" before its extension: docs/screenshots/web_page.png and
docs/screenshots/web_page_file.png are such).

Run by CTest; prints 'N passed, N failed' and exits non-zero on failure.
"""
import io
import os
import shutil
import sys
import tempfile
import unittest
import urllib.request
import zipfile

import docx

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from harness import Server, free_port, pb2

DEFAULT_MODEL = os.environ.get("XLATE_DEFAULT_MODEL")


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1100,800"):
        options.add_argument(flag)
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


class WebPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The shipped model, so that the page (and its screenshot) shows a real translation.
        cls.server = Server(f"--http_port={free_port()}", model_dir=DEFAULT_MODEL)
        cls.driver = browser()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()
        cls.server.close()

    def test_typed_text_is_translated_as_grpc_translates_it(self):
        driver = self.driver
        driver.get(f"http://127.0.0.1:{self.server.http_port}/")
        wait = WebDriverWait(driver, 60)
        wait.until(lambda d: d.find_element(By.ID, "translate").get_attribute("data-ready"))
        self.assertEqual(Select(driver.find_element(By.ID, "source")).first_selected_option
                         .get_attribute("value"), "en")
        self.assertEqual(Select(driver.find_element(By.ID, "target")).first_selected_option
                         .get_attribute("value"), "de")
        text = "A man in a blue shirt is riding a bike down the street."
        driver.find_element(By.ID, "input").send_keys(text)
        output = driver.find_element(By.ID, "output")
        wait.until(lambda d: output.get_attribute("data-done") == "true")
        expected = self.server.stub.Translate(
            pb2.TranslateRequest(contents=[text], source_language_code="en",
                                 target_language_code="de"), timeout=60)
        self.assertEqual(output.text, expected.translations[0].translated_text)
        # The alignment: hovering the first target word colours source words by weight.
        target_tokens = driver.find_elements(By.CSS_SELECTOR, "#alignment .target .token")
        self.assertGreater(len(target_tokens), 3)
        ActionChains(driver).move_to_element(target_tokens[1]).perform()
        source_tokens = driver.find_elements(
            By.CSS_SELECTOR, "#alignment .sentence > div:not(.target) .token")
        lit = [s for s in source_tokens if s.value_of_css_property("background-color")
               not in ("rgba(0, 0, 0, 0)", "transparent")]
        self.assertGreater(len(lit), 0)
        screenshot = os.environ.get("XLATE_SCREENSHOT")
        if screenshot:
            driver.save_screenshot(screenshot)
        # Detection from the page: "Detect" as the source.
        Select(driver.find_element(By.ID, "source")).select_by_value("auto")
        wait.until(lambda d: "detected en" in d.find_element(By.ID, "status").text)
        self.assertEqual(output.text, expected.translations[0].translated_text)
        # Cleared: the translation, its alignment and the status go (the QA round: the
        # alignment's spans stayed).
        driver.find_element(By.ID, "input").clear()
        driver.find_element(By.ID, "input").send_keys(" ")
        wait.until(lambda d: d.find_element(By.ID, "output").text == "")
        wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#alignment .token"))
        self.assertEqual(driver.find_element(By.ID, "status").text, "")

    def test_a_file_is_translated_through_a_job_and_downloaded(self):
        driver = self.driver
        driver.get(f"http://127.0.0.1:{self.server.http_port}/")
        wait = WebDriverWait(driver, 60)
        wait.until(lambda d: d.find_element(By.ID, "translate").get_attribute("data-ready"))
        document = docx.Document()
        first = document.add_paragraph("The ")
        first.add_run("dog").bold = True
        first.add_run(" runs in the park.")
        document.add_paragraph("A man is reading a newspaper. Two children are playing.")
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "report.docx")
            document.save(path)
            with open(path, "rb") as f:
                source = f.read()
            driver.find_element(By.ID, "file").send_keys(path)
            driver.find_element(By.ID, "translate-file").click()
            link = driver.find_element(By.ID, "file-download")
            wait.until(lambda d: link.is_displayed())
        self.assertEqual(link.get_attribute("download"), "report.de.docx")
        self.assertEqual(driver.find_element(By.ID, "file-status").text, "Done: 3 sentences.")
        # The link's file (the job's content, which the page fetched) is TranslateDocument's.
        self.assertTrue(link.get_attribute("href").startswith("blob:"))
        job = link.get_attribute("data-job")
        downloaded = urllib.request.urlopen(
            f"http://127.0.0.1:{self.server.http_port}/v1/documents/{job}/content",
            timeout=60).read()
        expected = self.server.stub.TranslateDocument(
            pb2.TranslateDocumentRequest(content=source, file_name="report.docx",
                                         source_language_code="en", target_language_code="de"),
            timeout=60)

        def parts(archive):
            with zipfile.ZipFile(io.BytesIO(archive)) as z:
                return {name: z.read(name) for name in z.namelist()}
        self.assertEqual(parts(downloaded), parts(expected.content))
        screenshot = os.environ.get("XLATE_SCREENSHOT")
        if screenshot:
            stem, extension = os.path.splitext(screenshot)
            driver.save_screenshot(stem + "_file" + extension)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed, skipped = len(result.failures) + len(result.errors), len(result.skipped)
    print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed or not result.wasSuccessful() else 0)
